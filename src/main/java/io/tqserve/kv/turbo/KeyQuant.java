package io.tqserve.kv.turbo;

import java.util.List;
import java.util.Locale;

/**
 * The key quantizers of vllm-metal's {@code QUANT_PARAMS}: per-32-group affine codes with an fp16 scale and an fp16
 * zero point. Only 8-bit keys can be signed; {@code int4} and {@code int2} are unsigned despite their names.
 */
public enum KeyQuant {
    /** Signed 8-bit (alias {@code int8}), codes −127…127, zero = rint((max+min)/(2·scale)). */
    Q8_0(8, true, List.of("q8_0", "int8")),
    /** Unsigned 8-bit, codes 0…255. */
    UINT8(8, false, List.of("uint8")),
    /** Unsigned 5-bit, codes 0…31. */
    Q5_0(5, false, List.of("q5_0")),
    /** Unsigned 4-bit (aliases {@code int4}, {@code uint4}), codes 0…15. */
    Q4_0(4, false, List.of("q4_0", "int4", "uint4")),
    /** Unsigned 2-bit (alias {@code uint2}), codes 0…3. */
    INT2(2, false, List.of("int2", "uint2"));

    private final int bits;
    private final boolean signed;
    private final List<String> names;

    KeyQuant(int bits, boolean signed, List<String> names) {
        this.bits = bits;
        this.signed = signed;
        this.names = names;
    }

    public int bits() {
        return bits;
    }

    public boolean signed() {
        return signed;
    }

    /** Largest code magnitude: 127 for signed 8-bit, 2^bits − 1 otherwise. */
    public int maxCode() {
        return signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    }

    /** Smallest code: −127 for signed 8-bit, 0 otherwise. */
    public int minCode() {
        return signed ? -maxCode() : 0;
    }

    /** The canonical name and its aliases. */
    public List<String> names() {
        return names;
    }

    /** The quantizer a {@code KvScheme.Turbo} key width selects: 8 → signed q8_0, 5/4/2 → unsigned. */
    public static KeyQuant forSchemeBits(int kBits) {
        return switch (kBits) {
            case 8 -> Q8_0;
            case 5 -> Q5_0;
            case 4 -> Q4_0;
            case 2 -> INT2;
            default -> throw new IllegalArgumentException("key bits " + kBits + " not supported (needs 2, 4, 5 or 8)");
        };
    }

    /** Parses a vllm-metal key quant name or alias ({@code q8_0}, {@code int8}, {@code uint8}, {@code int4}, …). */
    public static KeyQuant parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        for (KeyQuant q : values()) {
            if (q.names.contains(n)) {
                return q;
            }
        }
        throw new IllegalArgumentException("unknown key quant '" + name + "'; accepted: q8_0, int8, uint8, q5_0, q4_0, "
                + "int4, uint4, int2, uint2");
    }
}
