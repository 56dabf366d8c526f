package io.tqserve.cli;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * A JSON value written exactly as Python's {@code json.dumps(value, indent=None, ensure_ascii=False)} writes it
 * after {@code json.loads}: separators {@code ", "} and {@code ": "}, members in document order, non-ASCII
 * characters raw, control characters as {@code \\uXXXX} (lower-case hex), integers at full precision, and floats
 * as Python's {@code repr} prints them (shortest round-trip digits; exponent notation below 1e-4 or from 1e16,
 * e.g. {@code 1e-05}, {@code 1e+16}, {@code 1.5e+300}; {@code Infinity} and {@code NaN}). MaskBench tokenizes its
 * test instances from this text, so its token sequences depend on these bytes. Written by hand: no JVM JSON
 * library has a "Python compatible" mode, and the format is a few rules over Jackson's tree.
 *
 * <p>The tree must be read with floats as doubles (Jackson's default), as {@code json.loads} reads them.
 */
final class PythonJson {
    private PythonJson() {
    }

    static String dumps(JsonNode node) {
        StringBuilder sb = new StringBuilder();
        write(node, sb);
        return sb.toString();
    }

    private static void write(JsonNode n, StringBuilder sb) {
        if (n.isObject()) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, JsonNode> e : n.properties()) {
                if (!first) {
                    sb.append(", ");
                }
                first = false;
                string(e.getKey(), sb);
                sb.append(": ");
                write(e.getValue(), sb);
            }
            sb.append('}');
        } else if (n.isArray()) {
            sb.append('[');
            for (int i = 0; i < n.size(); i++) {
                if (i > 0) {
                    sb.append(", ");
                }
                write(n.get(i), sb);
            }
            sb.append(']');
        } else if (n.isString()) {
            string(n.asString(), sb);
        } else if (n.isIntegralNumber()) {
            sb.append(n.bigIntegerValue());
        } else if (n.isNumber()) {
            sb.append(floatRepr(n.doubleValue()));
        } else if (n.isBoolean()) {
            sb.append(n.booleanValue() ? "true" : "false");
        } else if (n.isNull()) {
            sb.append("null");
        } else {
            throw new IllegalArgumentException("not a JSON value: " + n.getNodeType());
        }
    }

    static void string(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /** Python's {@code float.__repr__} (and what {@code json} writes for a float). */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        String sign = (Double.doubleToRawLongBits(d) < 0) ? "-" : "";
        if (d == 0) {
            return sign + "0.0";
        }
        // Double.toString gives the shortest decimal that rounds to d (JDK 19+), as Python's repr does
        BigDecimal b = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        // Java prints at least two significant digits (4.9E-324 where Python prints 5e-324): drop digits while the
        // shorter decimal still reads back as the same double
        while (b.precision() > 1) {
            BigDecimal shorter = b.round(new MathContext(b.precision() - 1, RoundingMode.HALF_EVEN));
            if (shorter.doubleValue() != Math.abs(d)) {
                break;
            }
            b = shorter.stripTrailingZeros();
        }
        String digits = b.unscaledValue().toString();
        int n = digits.length();
        int decpt = n - b.scale(); // d = 0.digits x 10^decpt
        StringBuilder sb = new StringBuilder(sign);
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                sb.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= n) {
                sb.append(digits).append("0".repeat(decpt - n)).append(".0");
            } else {
                sb.append(digits, 0, decpt).append('.').append(digits, decpt, n);
            }
        } else {
            int exp = decpt - 1;
            sb.append(digits.charAt(0));
            if (n > 1) {
                sb.append('.').append(digits, 1, n);
            }
            sb.append('e').append(exp < 0 ? '-' : '+');
            int a = Math.abs(exp);
            if (a < 10) {
                sb.append('0');
            }
            sb.append(a);
        }
        return sb.toString();
    }
}
