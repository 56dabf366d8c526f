package io.tqserve.kv;

import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The KV cache scheme: a closed set parsed once from configuration strings.
 * <ul>
 *   <li>{@code bf16} — keys and values rounded to bfloat16;</li>
 *   <li>{@code turbo:k<bits>v<bits>} — TurboQuant: per-32-group affine keys (8 bits signed, or 2/4/5 bits
 *       unsigned) and Hadamard-rotated Lloyd-Max values (2/3/4/5/8 bits);</li>
 *   <li>{@code int8} / {@code int4} — uniform affine keys and values, group 64, fp16 scale and bias (as mlx-lm).</li>
 * </ul>
 */
public sealed interface KvScheme permits KvScheme.Bf16, KvScheme.Turbo, KvScheme.Uniform {

    String ACCEPTED = "bf16, turbo:k<kbits>v<vbits> (kbits in 2,4,5,8; vbits in 2,3,4,5,8; e.g. turbo:k8v3), int8, int4";

    Set<Integer> TURBO_K_BITS = Set.of(2, 4, 5, 8);
    Set<Integer> TURBO_V_BITS = Set.of(2, 3, 4, 5, 8);

    /** The configuration string of this scheme; {@link #parse} of it gives back an equal scheme. */
    String id();

    /** bfloat16 keys and values. */
    record Bf16() implements KvScheme {
        @Override
        public String id() {
            return "bf16";
        }

        @Override
        public String toString() {
            return id();
        }
    }

    /** TurboQuant with key bits {@code kBits} and value bits {@code vBits}. */
    record Turbo(int kBits, int vBits) implements KvScheme {
        public Turbo {
            if (!TURBO_K_BITS.contains(kBits) || !TURBO_V_BITS.contains(vBits)) {
                throw new IllegalArgumentException(
                        "invalid turbo KV scheme k" + kBits + "v" + vBits + "; accepted: " + ACCEPTED);
            }
        }

        @Override
        public String id() {
            return "turbo:k" + kBits + "v" + vBits;
        }

        @Override
        public String toString() {
            return id();
        }
    }

    /** Uniform affine quantization of keys and values with {@code bits} bits, group 64 along head_dim. */
    record Uniform(int bits) implements KvScheme {
        public static final int GROUP = 64;

        public Uniform {
            if (bits != 8 && bits != 4) {
                throw new IllegalArgumentException("invalid uniform KV scheme int" + bits + "; accepted: " + ACCEPTED);
            }
        }

        @Override
        public String id() {
            return "int" + bits;
        }

        @Override
        public String toString() {
            return id();
        }
    }

    KvScheme BF16 = new Bf16();
    KvScheme TURBO_DEFAULT = new Turbo(8, 3);

    /** Parses a configuration string; an invalid one fails with the accepted forms listed. */
    static KvScheme parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("KV scheme is missing; accepted: " + ACCEPTED);
        }
        String s = text.trim().toLowerCase(Locale.ROOT);
        switch (s) {
            case "bf16":
                return BF16;
            case "int8":
                return new Uniform(8);
            case "int4":
                return new Uniform(4);
            default:
                break;
        }
        Matcher m = Pattern.compile("turbo:k(\\d)v(\\d)").matcher(s);
        if (m.matches()) {
            int k = Integer.parseInt(m.group(1));
            int v = Integer.parseInt(m.group(2));
            if (TURBO_K_BITS.contains(k) && TURBO_V_BITS.contains(v)) {
                return new Turbo(k, v);
            }
        }
        throw new IllegalArgumentException("invalid KV scheme '" + text + "'; accepted: " + ACCEPTED);
    }
}
