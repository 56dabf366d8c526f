package io.tqserve.template;

import java.util.ArrayList;
import java.util.List;

/** Python's binary arithmetic: {@code + - * / // % **} over int, float, str and list. */
final class Operators {
    private Operators() {
    }

    static Object binary(String op, Object a, Object b) {
        if (a instanceof Undefined u) {
            throw u.fail();
        }
        if (b instanceof Undefined u) {
            throw u.fail();
        }
        if (a instanceof Markup || b instanceof Markup) {
            return markup(op, a, b);
        }
        boolean ints = isInt(a) && isInt(b);
        boolean nums = Py.isNumber(a) && Py.isNumber(b);
        switch (op) {
            case "+" -> {
                if (ints) {
                    return Py.integer(a) + Py.integer(b);
                }
                if (nums) {
                    return Py.num(a) + Py.num(b);
                }
                if (a instanceof String x && b instanceof String y) {
                    return x + y;
                }
                if (a instanceof List<?> x && b instanceof List<?> y && (a instanceof Tuple) == (b instanceof Tuple)) {
                    List<Object> out = new ArrayList<>(x);
                    out.addAll(y);
                    return a instanceof Tuple ? Tuple.of(out) : out;
                }
                if (a instanceof List<?> && b instanceof List<?>) {
                    throw RenderException.type("can only concatenate " + Py.typeName(a) + " (not \""
                            + Py.typeName(b) + "\") to " + Py.typeName(a));
                }
                if (a instanceof String) {
                    throw RenderException.type("can only concatenate str (not \"" + Py.typeName(b) + "\") to str");
                }
                if (a instanceof List<?>) {
                    throw RenderException.type("can only concatenate list (not \"" + Py.typeName(b) + "\") to list");
                }
            }
            case "-" -> {
                if (ints) {
                    return Py.integer(a) - Py.integer(b);
                }
                if (nums) {
                    return Py.num(a) - Py.num(b);
                }
            }
            case "*" -> {
                if (ints) {
                    return Py.integer(a) * Py.integer(b);
                }
                if (nums) {
                    return Py.num(a) * Py.num(b);
                }
                if (a instanceof String s && isInt(b)) {
                    return s.repeat((int) Math.max(0, Py.integer(b)));
                }
                if (b instanceof String s && isInt(a)) {
                    return s.repeat((int) Math.max(0, Py.integer(a)));
                }
                if (a instanceof List<?> l && isInt(b)) {
                    List<Object> out = new ArrayList<>();
                    for (long i = 0; i < Py.integer(b); i++) {
                        out.addAll(l);
                    }
                    return a instanceof Tuple ? Tuple.of(out) : out;
                }
            }
            case "/" -> {
                if (nums) {
                    if (Py.num(b) == 0) {
                        throw new RenderException("ZeroDivisionError", "division by zero");
                    }
                    return Py.num(a) / Py.num(b);
                }
            }
            case "//" -> {
                if (ints) {
                    if (Py.integer(b) == 0) {
                        throw new RenderException("ZeroDivisionError", "integer division or modulo by zero");
                    }
                    return Math.floorDiv(Py.integer(a), Py.integer(b));
                }
                if (nums) {
                    if (Py.num(b) == 0) {
                        throw new RenderException("ZeroDivisionError", "float floor division by zero");
                    }
                    return Math.floor(Py.num(a) / Py.num(b));
                }
            }
            case "%" -> {
                if (ints) {
                    if (Py.integer(b) == 0) {
                        throw new RenderException("ZeroDivisionError", "integer division or modulo by zero");
                    }
                    return Math.floorMod(Py.integer(a), Py.integer(b));
                }
                if (nums) {
                    double x = Py.num(a);
                    double y = Py.num(b);
                    double m = x % y;
                    return m != 0 && (m < 0) != (y < 0) ? m + y : m;
                }
                if (a instanceof String fmt) {
                    return Formats.percent(fmt, b);
                }
            }
            case "**" -> {
                if (ints && Py.integer(b) >= 0) {
                    long r = 1;
                    for (long i = 0; i < Py.integer(b); i++) {
                        r = Math.multiplyExact(r, Py.integer(a));
                    }
                    return r;
                }
                if (nums) {
                    return Math.pow(Py.num(a), Py.num(b));
                }
            }
            default -> { }
        }
        String symbol = op.equals("**") ? "** or pow()" : op;
        throw RenderException.type("unsupported operand type(s) for " + symbol + ": '" + Py.typeName(a) + "' and '"
                + Py.typeName(b) + "'");
    }

    /** Markup + str escapes the str side; Markup % args escapes the arguments. */
    private static Object markup(String op, Object a, Object b) {
        if (op.equals("+") && (a instanceof String || a instanceof Markup) && (b instanceof String || b instanceof Markup)) {
            return new Markup(Markup.escape(a).text() + Markup.escape(b).text());
        }
        if (op.equals("%") && a instanceof Markup m) {
            return new Markup(Formats.percent(m.text(), b instanceof Tuple t ? escapeAll(t) : Markup.escape(b)));
        }
        Object x = a instanceof Markup m ? m.text() : a;
        Object y = b instanceof Markup m ? m.text() : b;
        Object r = binary(op, x, y);
        return r instanceof String s && op.equals("*") ? new Markup(s) : r;
    }

    private static Tuple escapeAll(Tuple t) {
        Object[] out = new Object[t.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Markup.escape(t.get(i));
        }
        return new Tuple(out);
    }

    private static boolean isInt(Object v) {
        return v instanceof Long || v instanceof Boolean;
    }
}
