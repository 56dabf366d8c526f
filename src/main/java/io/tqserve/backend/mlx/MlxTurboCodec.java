package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;

/**
 * The TurboQuant KV codec (vllm-metal's {@code tq_encode} Metal kernel semantics, the canonical variant of
 * {@code goldens/turboquant/SPEC.md}) expressed in MLX ops, so that an MLX-resident cache could encode and
 * decode on the device. Float32 arithmetic with fp16 rounding at the spec's fixed points:
 *
 * <ul>
 *   <li>keys (per group of 32): min/max in float32, scale = h(h(max − min) ÷ h(M)) in fp16, zero from an fp16
 *       quotient rounded half-to-even, index = rint(float(h(x) ÷ scale) − zero) clamped (NaN → 0); signed 8-bit
 *       keys use M = 254 and the mid-range zero;</li>
 *   <li>values: x·σ, {@code mlx_hadamard_transform} in float32 (normalised 1/√d), rounded to fp16, group RMS
 *       scale h(√(Σy²/32)), index = number of codebook boundaries strictly below h(y ÷ scale);</li>
 *   <li>decode: keys (idx + zero)·scale; values H(c[idx]·scale)·σ, all float32.</li>
 * </ul>
 *
 * Inputs are (n, headDim) arrays of any float dtype; indices come back as int32, scales and zeros as fp16.
 *
 * <p>{@link MlxTurboKvCache} encodes on the device with it; {@code MlxTurboCodecParityTest} holds it to the golden
 * vectors, and to the Java codec on degenerate input. Like the Java codec it deviates from the reference only
 * where the reference would store a zero or non-finite scale or zero point ({@code docs/kv-format.md}, "Deviation
 * from the reference"): a key group constant at fp16 precision gets scale 1, zero = its value and codes 0; a key
 * group whose canonical scale or zero is zero or not finite (fp16 overflow) gets the rescaled fallback; value inputs
 * are clamped to ±2^100 before the rotation and the rotated values rounded to fp16 with saturation at ±65504.
 * Everywhere else the bytes are the reference's.
 */
public final class MlxTurboCodec {
    /** Elements per scale group. */
    public static final int GROUP = 32;
    /** Largest finite fp16. */
    private static final float FP16_MAX = 65504f;
    /** Bound on |zero| of the rescaled key fallback, so that it stays an fp16-exact integer. */
    private static final float ZERO_BOUND = 1024f;
    /** Value inputs are clamped to ±2^100 before the rotation (fp16-range inputs are untouched). */
    private static final float INPUT_BOUND = 0x1p100f;

    private final int headDim;
    private final int kBits;
    private final boolean kSigned;
    private final int vBits;
    private final float[] signs;       // (headDim) ±1
    private final float[] centroids;   // (2^vBits) value codebook
    private final float[] boundaries;  // (2^vBits - 1) decision boundaries, 0.5·(c[k] + c[k+1]) in float32

    /** Encoded keys: indices (n, headDim) int32, scale and zero (n, headDim/32) fp16. */
    public record Keys(MlxArray indices, MlxArray scale, MlxArray zero) {
    }

    /** Encoded values: indices (n, headDim) int32, scale (n, headDim/32) fp16. */
    public record Values(MlxArray indices, MlxArray scale) {
    }

    public MlxTurboCodec(int headDim, int kBits, boolean kSigned, int vBits, float[] signs, float[] centroids,
            float[] boundaries) {
        if (headDim % GROUP != 0 || signs.length != headDim) {
            throw new IllegalArgumentException("head_dim " + headDim + " needs " + headDim + " signs and groups of 32");
        }
        if (kSigned && kBits != 8) {
            throw new IllegalArgumentException("only 8-bit keys can be signed");
        }
        if (centroids.length != 1 << vBits || boundaries.length != centroids.length - 1) {
            throw new IllegalArgumentException(vBits + "-bit values need " + (1 << vBits) + " centroids");
        }
        this.headDim = headDim;
        this.kBits = kBits;
        this.kSigned = kSigned;
        this.vBits = vBits;
        this.signs = signs.clone();
        this.centroids = centroids.clone();
        this.boundaries = boundaries.clone();
    }

    private MlxArray f16(MlxScope s, float v) {
        return s.astype(s.scalar(v), MlxDtype.FLOAT16);
    }

    /** (n, headDim) → (n, headDim/32, 32). */
    private MlxArray groups(MlxScope s, MlxArray x) {
        int n = x.shape()[0];
        return s.reshape(x, n, headDim / GROUP, GROUP);
    }

    public Keys encodeKeys(MlxScope s, MlxArray x) {
        int n = x.shape()[0];
        MlxArray xf = groups(s, s.astype(x, MlxDtype.FLOAT32));
        MlxArray xh = groups(s, s.astype(x, MlxDtype.FLOAT16));
        MlxArray mn = s.min(xf, 2, true);
        MlxArray mx = s.max(xf, 2, true);
        MlxArray range = s.astype(s.subtract(mx, mn), MlxDtype.FLOAT16); // float32 difference, then h()
        MlxArray scale;
        MlxArray zero;
        int lo;
        int hi;
        if (kSigned) {
            int m = (1 << (kBits - 1)) - 1;
            scale = s.divide(range, f16(s, 2f * m));
            MlxArray sum = s.astype(s.add(mx, mn), MlxDtype.FLOAT16);
            zero = s.rint(s.divide(sum, s.multiply(f16(s, 2f), scale)));
            lo = -m;
            hi = m;
        } else {
            int m = (1 << kBits) - 1;
            scale = s.divide(range, f16(s, m));
            zero = s.rint(s.divide(s.astype(mn, MlxDtype.FLOAT16), scale));
            lo = 0;
            hi = m;
        }
        MlxArray q = s.astype(s.divide(xh, scale), MlxDtype.FLOAT32); // fp16 quotient
        MlxArray t = s.subtract(q, s.astype(zero, MlxDtype.FLOAT32)); // difference in float32
        // the deviation, per group, where the canonical scale is 0 or not finite or the zero is not finite
        MlxArray canonical = s.logicalAnd(s.greater(scale, f16(s, 0f)), s.logicalAnd(finite(s, scale), finite(s,
                zero)));
        MlxArray mnh = saturated(s, mn);
        MlxArray mxh = saturated(s, mx);
        MlxArray constant = s.equal(mnh, mxh);
        float r = kSigned ? 254f : hi;
        MlxArray bound = s.divide(s.maximum(abs(s, mnh), abs(s, mxh)), s.scalar(ZERO_BOUND));
        MlxArray sr = roundUp(s, s.maximum(s.divide(s.subtract(mxh, mnh), s.scalar(r)), bound)); // fp16
        MlxArray srf = s.astype(sr, MlxDtype.FLOAT32);
        MlxArray zr = s.rint(kSigned ? s.divide(s.add(mxh, mnh), s.multiply(s.scalar(2f), srf)) : s.divide(mnh, srf));
        MlxArray tr = s.subtract(s.divide(saturated(s, xf), srf), zr);
        scale = s.where(canonical, scale, s.where(constant, f16(s, 1f), sr));
        zero = s.where(canonical, zero, s.astype(s.where(constant, mnh, zr), MlxDtype.FLOAT16));
        t = s.where(canonical, t, s.where(constant, s.scalar(0f), tr));
        MlxArray clamped = s.minimum(s.maximum(s.rint(t), s.scalar((float) lo)), s.scalar((float) hi));
        MlxArray idx = s.where(s.isnan(clamped), s.scalar(0f), clamped); // NaN → 0, as MLX's cast did
        return new Keys(s.reshape(s.astype(idx, MlxDtype.INT32), n, headDim),
                s.reshape(scale, n, headDim / GROUP), s.reshape(zero, n, headDim / GROUP));
    }

    /** Whether each element is finite (x − x is 0 for finite x, NaN for ±inf and NaN). */
    private static MlxArray finite(MlxScope s, MlxArray x) {
        return s.equal(s.subtract(x, x), s.astype(s.scalar(0f), x.dtype()));
    }

    private static MlxArray abs(MlxScope s, MlxArray x) {
        return s.maximum(x, s.subtract(s.scalar(0f), x));
    }

    /** hs(x): x rounded to fp16 with saturation at ±65504 instead of overflow, as float32. */
    private static MlxArray saturated(MlxScope s, MlxArray x) {
        MlxArray c = s.minimum(s.maximum(x, s.scalar(-FP16_MAX)), s.scalar(FP16_MAX));
        return s.astype(s.astype(c, MlxDtype.FLOAT16), MlxDtype.FLOAT32);
    }

    /** The smallest fp16 ≥ x for positive finite float32 x ≤ 65504: h(x), or the next fp16 up when h(x) < x. */
    private static MlxArray roundUp(MlxScope s, MlxArray x) {
        MlxArray h = s.astype(x, MlxDtype.FLOAT16);
        MlxArray next = s.view(s.astype(s.add(s.astype(s.view(h, MlxDtype.UINT16), MlxDtype.INT32), s.scalar(1)),
                MlxDtype.UINT16), MlxDtype.FLOAT16);
        return s.where(s.less(s.astype(h, MlxDtype.FLOAT32), x), next, h);
    }

    /** fl32(fl32(idx + zero) · scale), (n, headDim) float32. */
    public MlxArray decodeKeys(MlxScope s, Keys k) {
        int n = k.indices().shape()[0];
        MlxArray idx = groups(s, s.astype(k.indices(), MlxDtype.FLOAT32));
        MlxArray zero = s.expandDims(s.astype(k.zero(), MlxDtype.FLOAT32), 2);
        MlxArray scale = s.expandDims(s.astype(k.scale(), MlxDtype.FLOAT32), 2);
        return s.reshape(s.multiply(s.add(idx, zero), scale), n, headDim);
    }

    public Values encodeValues(MlxScope s, MlxArray x) {
        int n = x.shape()[0];
        MlxArray sig = s.fromFloats(signs, headDim);
        MlxArray xc = s.minimum(s.maximum(s.astype(x, MlxDtype.FLOAT32), s.scalar(-INPUT_BOUND)),
                s.scalar(INPUT_BOUND));
        MlxArray rotated = s.hadamard(s.multiply(xc, sig)); // float32 FWHT, 1/√d; no inf − inf in the butterflies
        MlxArray yh = groups(s, s.astype(saturated(s, rotated), MlxDtype.FLOAT16)); // fp16, saturating
        MlxArray y32 = s.astype(yh, MlxDtype.FLOAT32);
        MlxArray sumsq = s.sum(s.multiply(y32, y32), 2, true); // float32 squares of the fp16 values
        MlxArray scale = s.astype(s.sqrt(s.multiply(sumsq, s.scalar(1f / GROUP))), MlxDtype.FLOAT16);
        MlxArray normed = s.astype(s.divide(yh, scale), MlxDtype.FLOAT32); // fp16 quotient
        MlxArray above = s.greater(s.expandDims(normed, 3), s.fromFloats(boundaries, boundaries.length));
        MlxArray idx = s.sum(s.astype(above, MlxDtype.INT32), 3, false); // boundaries strictly below; NaN → 0
        return new Values(s.reshape(idx, n, headDim), s.reshape(scale, n, headDim / GROUP));
    }

    /** H(c[idx] · scale) · σ, (n, headDim) float32. */
    public MlxArray decodeValues(MlxScope s, Values v) {
        int n = v.indices().shape()[0];
        MlxArray c = s.take(s.fromFloats(centroids, centroids.length), v.indices(), 0); // (n, headDim)
        MlxArray scale = s.expandDims(s.astype(v.scale(), MlxDtype.FLOAT32), 2);
        MlxArray y = s.reshape(s.multiply(groups(s, c), scale), n, headDim);
        return s.multiply(s.hadamard(y), s.fromFloats(signs, headDim));
    }

    /**
     * Packs (n, headDim) indices of {@code bits} bits as the LSB-first bitstream of the spec (element i at bits
     * [i·bits, i·bits+bits); signed 8-bit values as two's complement): (n, headDim·bits/8) uint8.
     */
    public MlxArray pack(MlxScope s, MlxArray indices, int bits) {
        int n = indices.shape()[0];
        MlxArray u = s.astype(s.bitwiseAnd(s.astype(indices, MlxDtype.INT32), s.scalar(0xFF)), MlxDtype.UINT32);
        MlxArray bitIdx = s.arange(0, bits, MlxDtype.UINT32);
        MlxArray bitsOf = s.bitwiseAnd(s.rightShift(s.expandDims(u, 2), bitIdx), s.astype(s.scalar(1),
                MlxDtype.UINT32));
        MlxArray stream = s.reshape(bitsOf, n, headDim * bits / 8, 8); // (n, bytes, 8) bits, LSB first
        MlxArray weighted = s.leftShift(stream, s.arange(0, 8, MlxDtype.UINT32));
        return s.astype(s.sum(weighted, 2, false), MlxDtype.UINT8);
    }

    public int kBits() {
        return kBits;
    }

    public int vBits() {
        return vBits;
    }
}
