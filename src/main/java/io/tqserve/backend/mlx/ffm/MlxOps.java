package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.MemorySegment;

/**
 * The MLX operations, each one call of MLX-C: the result is a new array owned by the scope, the call's status
 * is checked and MLX's error text becomes an {@link MlxException}. Operations are lazy (MLX builds a graph);
 * {@link MlxScope#eval} or a read runs them.
 */
public abstract sealed class MlxOps permits MlxScope {
    protected final Mlx mlx;
    private final MlxOpsNative ops;

    MlxOps(Mlx mlx) {
        this.mlx = mlx;
        this.ops = mlx.ops;
    }

    /** A new empty array (ctx NULL) owned by the scope: a result slot, or an absent optional argument. */
    public abstract MlxArray newArray();

    /** The scope's stream (mlx_stream by value). */
    abstract MemorySegment stream();

    /** A native int[] for shapes and axes, in the scope's arena. */
    abstract MemorySegment ints(int... values);

    /** A NUL-terminated string in the scope's arena. */
    abstract MemorySegment cString(String s);

    /** An mlx_optional_float in the scope's arena; NaN means "no value". */
    abstract MemorySegment optionalFloat(float value);

    /** An mlx_optional_int holding {@code value}, in the scope's arena. */
    abstract MemorySegment optionalInt(int value);

    /** An mlx_optional_dtype in the scope's arena; null means "no value". */
    abstract MemorySegment optionalDtype(MlxDtype dtype);

    @FunctionalInterface
    interface Call {
        int call(MemorySegment res) throws Throwable;
    }

    /** Runs one MLX-C op writing into a new result array; checks the status. */
    final MlxArray op(String name, Call call) {
        MlxArray r = newArray();
        mlx.opIssued();
        int status;
        try {
            status = call.call(r.struct());
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
        MlxErrors.check(status, name);
        return r;
    }

    public MlxArray astype(MlxArray a, MlxDtype dtype) {
        return op("mlx_astype", r -> (int) ops.astype.invokeExact(r, a.struct(), dtype.c(), stream()));
    }

    /** Reinterprets the bytes as another dtype of the same size (e.g. bfloat16 as uint16). */
    public MlxArray view(MlxArray a, MlxDtype dtype) {
        return op("mlx_view", r -> (int) ops.view.invokeExact(r, a.struct(), dtype.c(), stream()));
    }

    public MlxArray reshape(MlxArray a, int... shape) {
        MemorySegment s = ints(shape);
        return op("mlx_reshape", r -> (int) ops.reshape.invokeExact(r, a.struct(), s, (long) shape.length, stream()));
    }

    public MlxArray transpose(MlxArray a, int... axes) {
        MemorySegment s = ints(axes);
        return op("mlx_transpose_axes",
                r -> (int) ops.transposeAxes.invokeExact(r, a.struct(), s, (long) axes.length, stream()));
    }

    /** a[start[i] .. stop[i]) along every axis, stride 1. */
    public MlxArray slice(MlxArray a, int[] start, int[] stop) {
        MemorySegment s0 = ints(start);
        MemorySegment s1 = ints(stop);
        MemorySegment st = ints(ones(start.length));
        long n = start.length;
        return op("mlx_slice", r -> (int) ops.slice.invokeExact(r, a.struct(), s0, n, s1, n, st, n, stream()));
    }

    /** src with src[start .. stop) replaced by update. */
    public MlxArray sliceUpdate(MlxArray src, MlxArray update, int[] start, int[] stop) {
        MemorySegment s0 = ints(start);
        MemorySegment s1 = ints(stop);
        MemorySegment st = ints(ones(start.length));
        long n = start.length;
        return op("mlx_slice_update",
                r -> (int) ops.sliceUpdate.invokeExact(r, src.struct(), update.struct(), s0, n, s1, n, st, n,
                        stream()));
    }

    private static int[] ones(int n) {
        int[] o = new int[n];
        java.util.Arrays.fill(o, 1);
        return o;
    }

    public abstract MlxArray concatenate(int axis, MlxArray... arrays);

    final int concatenateInto(MemorySegment res, MemorySegment vector, int axis) throws Throwable {
        return (int) ops.concatenateAxis.invokeExact(res, vector, axis, stream());
    }

    public MlxArray take(MlxArray a, MlxArray indices, int axis) {
        return op("mlx_take_axis", r -> (int) ops.takeAxis.invokeExact(r, a.struct(), indices.struct(), axis,
                stream()));
    }

    public MlxArray add(MlxArray a, MlxArray b) {
        return op("mlx_add", r -> (int) ops.add.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray subtract(MlxArray a, MlxArray b) {
        return op("mlx_subtract", r -> (int) ops.subtract.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray multiply(MlxArray a, MlxArray b) {
        return op("mlx_multiply", r -> (int) ops.multiply.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray divide(MlxArray a, MlxArray b) {
        return op("mlx_divide", r -> (int) ops.divide.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray maximum(MlxArray a, MlxArray b) {
        return op("mlx_maximum", r -> (int) ops.maximum.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray minimum(MlxArray a, MlxArray b) {
        return op("mlx_minimum", r -> (int) ops.minimum.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray greater(MlxArray a, MlxArray b) {
        return op("mlx_greater", r -> (int) ops.greater.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray equal(MlxArray a, MlxArray b) {
        return op("mlx_equal", r -> (int) ops.equal.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray less(MlxArray a, MlxArray b) {
        return op("mlx_less", r -> (int) ops.less.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray greaterEqual(MlxArray a, MlxArray b) {
        return op("mlx_greater_equal", r -> (int) ops.greaterEqual.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray logicalAnd(MlxArray a, MlxArray b) {
        return op("mlx_logical_and", r -> (int) ops.logicalAnd.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    /** a[..., indices[...], ...] along {@code axis} (indices broadcast against a). */
    public MlxArray takeAlongAxis(MlxArray a, MlxArray indices, int axis) {
        return op("mlx_take_along_axis",
                r -> (int) ops.takeAlongAxis.invokeExact(r, a.struct(), indices.struct(), axis, stream()));
    }

    /** Indices that sort {@code a} ascending along {@code axis}. */
    public MlxArray argsort(MlxArray a, int axis) {
        return op("mlx_argsort_axis", r -> (int) ops.argsortAxis.invokeExact(r, a.struct(), axis, stream()));
    }

    /** Inclusive prefix sums along {@code axis}. */
    public MlxArray cumsum(MlxArray a, int axis) {
        return op("mlx_cumsum", r -> (int) ops.cumsum.invokeExact(r, a.struct(), axis, false, true, stream()));
    }

    public MlxArray logsumexp(MlxArray a, int axis, boolean keepdims) {
        return op("mlx_logsumexp_axis", r -> (int) ops.logsumexpAxis.invokeExact(r, a.struct(), axis, keepdims,
                stream()));
    }

    /** A PRNG key from a seed (MLX's threefry key, a (2,) uint32 array). */
    public MlxArray randomKey(long seed) {
        return op("mlx_random_key", r -> (int) ops.randomKey.invokeExact(r, seed));
    }

    /** Splits a key into two independent keys, {next, sub}. */
    public MlxArray[] randomSplit(MlxArray key) {
        MlxArray first = newArray();
        MlxArray second = op("mlx_random_split",
                r -> (int) ops.randomSplit.invokeExact(first.struct(), r, key.struct(), stream()));
        return new MlxArray[] {first, second};
    }

    /** One draw per row from softmax(logits) along {@code axis} with the given key. */
    public MlxArray categorical(MlxArray logits, int axis, MlxArray key) {
        return op("mlx_random_categorical",
                r -> (int) ops.randomCategorical.invokeExact(r, logits.struct(), axis, key.struct(), stream()));
    }

    public MlxArray matmul(MlxArray a, MlxArray b) {
        return op("mlx_matmul", r -> (int) ops.matmul.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    /**
     * x · dequantize(w)ᵀ for a group-affine quantized matrix (MLX's {@code quantized_matmul} with
     * {@code transpose = true}, as mlx-lm's QuantizedLinear): {@code w} (out, in·bits/32) uint32 words,
     * {@code scales} and {@code biases} (out, in/groupSize). MLX computes in the promoted type of x and the scales.
     */
    public MlxArray quantizedMatmul(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        MemorySegment gs = optionalInt(groupSize);
        MemorySegment b = optionalInt(bits);
        MemorySegment mode = cString("affine");
        return op("mlx_quantized_matmul", r -> (int) ops.quantizedMatmul.invokeExact(r, x.struct(), w.struct(),
                scales.struct(), biases.struct(), true, gs, b, mode, stream()));
    }

    /**
     * The group-affine dequantization {@code scale·q + bias} of packed words (rows, cols·bits/32), computed in the
     * scales' dtype and returned as {@code dtype} (null: the scales' dtype).
     */
    public MlxArray dequantize(MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits, MlxDtype dtype) {
        MemorySegment gs = optionalInt(groupSize);
        MemorySegment b = optionalInt(bits);
        MemorySegment mode = cString("affine");
        MemorySegment dt = optionalDtype(dtype);
        MlxArray noGlobalScale = newArray();
        return op("mlx_dequantize", r -> (int) ops.dequantize.invokeExact(r, w.struct(), scales.struct(),
                biases.struct(), gs, b, mode, noGlobalScale.struct(), dt, stream()));
    }

    /** MLX's affine {@code quantize} of a (rows, cols) matrix: {words, scales, biases}. */
    public abstract MlxArray[] quantize(MlxArray w, int groupSize, int bits);

    final int quantizeInto(MemorySegment vectorRes, MlxArray w, int groupSize, int bits) throws Throwable {
        MemorySegment gs = optionalInt(groupSize);
        MemorySegment b = optionalInt(bits);
        MemorySegment mode = cString("affine");
        MlxArray noGlobalScale = newArray();
        return (int) ops.quantize.invokeExact(vectorRes, w.struct(), gs, b, mode, noGlobalScale.struct(), stream());
    }

    public MlxArray leftShift(MlxArray a, MlxArray b) {
        return op("mlx_left_shift", r -> (int) ops.leftShift.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray rightShift(MlxArray a, MlxArray b) {
        return op("mlx_right_shift", r -> (int) ops.rightShift.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray bitwiseAnd(MlxArray a, MlxArray b) {
        return op("mlx_bitwise_and", r -> (int) ops.bitwiseAnd.invokeExact(r, a.struct(), b.struct(), stream()));
    }

    public MlxArray sqrt(MlxArray a) {
        return op("mlx_sqrt", r -> (int) ops.sqrt.invokeExact(r, a.struct(), stream()));
    }

    public MlxArray sigmoid(MlxArray a) {
        return op("mlx_sigmoid", r -> (int) ops.sigmoid.invokeExact(r, a.struct(), stream()));
    }

    public MlxArray copy(MlxArray a) {
        return op("mlx_copy", r -> (int) ops.copy.invokeExact(r, a.struct(), stream()));
    }

    public MlxArray isnan(MlxArray a) {
        return op("mlx_isnan", r -> (int) ops.isnan.invokeExact(r, a.struct(), stream()));
    }

    /** condition ? x : y, elementwise with broadcasting. */
    public MlxArray where(MlxArray condition, MlxArray x, MlxArray y) {
        return op("mlx_where", r -> (int) ops.where.invokeExact(r, condition.struct(), x.struct(), y.struct(),
                stream()));
    }

    /** Round half to even ({@code mlx_round} with 0 decimals). */
    public MlxArray rint(MlxArray a) {
        return op("mlx_round", r -> (int) ops.round.invokeExact(r, a.struct(), 0, stream()));
    }

    public MlxArray sum(MlxArray a, int axis, boolean keepdims) {
        return op("mlx_sum_axis", r -> (int) ops.sumAxis.invokeExact(r, a.struct(), axis, keepdims, stream()));
    }

    public MlxArray max(MlxArray a, int axis, boolean keepdims) {
        return op("mlx_max_axis", r -> (int) ops.maxAxis.invokeExact(r, a.struct(), axis, keepdims, stream()));
    }

    public MlxArray min(MlxArray a, int axis, boolean keepdims) {
        return op("mlx_min_axis", r -> (int) ops.minAxis.invokeExact(r, a.struct(), axis, keepdims, stream()));
    }

    public MlxArray argmax(MlxArray a, int axis, boolean keepdims) {
        return op("mlx_argmax_axis", r -> (int) ops.argmaxAxis.invokeExact(r, a.struct(), axis, keepdims, stream()));
    }

    public MlxArray softmax(MlxArray a, int axis) {
        return op("mlx_softmax_axis", r -> (int) ops.softmaxAxis.invokeExact(r, a.struct(), axis, true, stream()));
    }

    /** Walsh–Hadamard transform over the last axis with MLX's default scale 1/√n. */
    public MlxArray hadamard(MlxArray a) {
        MemorySegment scale = optionalFloat(Float.NaN);
        return op("mlx_hadamard_transform", r -> (int) ops.hadamardTransform.invokeExact(r, a.struct(), scale,
                stream()));
    }

    public MlxArray expandDims(MlxArray a, int axis) {
        return op("mlx_expand_dims", r -> (int) ops.expandDims.invokeExact(r, a.struct(), axis, stream()));
    }

    public MlxArray arange(int start, int stop, MlxDtype dtype) {
        return op("mlx_arange", r -> (int) ops.arange.invokeExact(r, (double) start, (double) stop, 1.0, dtype.c(),
                stream()));
    }

    public MlxArray zeros(MlxDtype dtype, int... shape) {
        MemorySegment s = ints(shape);
        return op("mlx_zeros", r -> (int) ops.zeros.invokeExact(r, s, (long) shape.length, dtype.c(), stream()));
    }

    /** A row-contiguous copy, or the array itself when it already is. */
    public MlxArray contiguous(MlxArray a) {
        return op("mlx_contiguous", r -> (int) ops.contiguous.invokeExact(r, a.struct(), false, stream()));
    }

    /** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · weight. */
    public MlxArray rmsNorm(MlxArray x, MlxArray weight, float eps) {
        return op("mlx_fast_rms_norm", r -> (int) ops.rmsNorm.invokeExact(r, x.struct(), weight.struct(), eps,
                stream()));
    }

    /**
     * Rotary embedding of x (B, heads, T, headDim) at positions offset .. offset+T-1 with the given periods
     * ({@code freqs}, dims/2 of them; MLX uses their reciprocals as inverse frequencies).
     *
     * @param traditional false for Hugging Face's rotate_half pairing (i with i + dims/2)
     */
    public MlxArray rope(MlxArray x, int dims, boolean traditional, float scale, int offset, MlxArray freqs) {
        MemorySegment base = optionalFloat(Float.NaN);
        return op("mlx_fast_rope", r -> (int) ops.rope.invokeExact(r, x.struct(), dims, traditional, base, scale,
                offset,
                freqs.struct(), stream()));
    }

    /**
     * As {@link #rope}, with each batch row at its own position: {@code offsets} is a (B) int32 array, row b of x
     * (B, heads, T, headDim) starts at offsets[b] ({@code mlx_fast_rope_dynamic}).
     */
    public MlxArray rope(MlxArray x, int dims, boolean traditional, float scale, MlxArray offsets, MlxArray freqs) {
        MemorySegment base = optionalFloat(Float.NaN);
        return op("mlx_fast_rope_dynamic", r -> (int) ops.ropeDynamic.invokeExact(r, x.struct(), dims, traditional,
                base, scale, offsets.struct(), freqs.struct(), stream()));
    }

    /** a with a[indices[i], ...] = updates[i, 0, ...] along {@code axis} ({@code mlx_scatter_single}). */
    public MlxArray scatter(MlxArray a, MlxArray indices, MlxArray updates, int axis) {
        return op("mlx_scatter_single",
                r -> (int) ops.scatterSingle.invokeExact(r, a.struct(), indices.struct(), updates.struct(), axis,
                        stream()));
    }

    /**
     * softmax(q·kᵀ·scale + mask)·v with q (B, numHeads, T, headDim), k and v (B, numKvHeads, S, headDim) and a
     * boolean mask broadcast to (B, numHeads, T, S) (true: the key is seen), as one
     * {@code mlx_fast_scaled_dot_product_attention}.
     */
    public MlxArray attention(MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray mask) {
        MemorySegment mode = cString("");
        MlxArray noSinks = newArray();
        return op("mlx_fast_scaled_dot_product_attention", r -> (int) ops.sdpa.invokeExact(r, q.struct(), k.struct(),
                v.struct(), scale, mode, mask.struct(), noSinks.struct(), stream()));
    }

    /**
     * softmax(q·kᵀ·scale + mask)·v with q (B, numHeads, T, headDim) and k, v (B, numKvHeads, S, headDim).
     *
     * @param causal bottom-right aligned causal mask (query i sees keys up to S - T + i); else no mask
     */
    public MlxArray attention(MlxArray q, MlxArray k, MlxArray v, float scale, boolean causal) {
        MemorySegment mode = cString(causal ? "causal" : ""); // never NULL: MLX-C builds a std::string from it
        MlxArray noMask = newArray();
        MlxArray noSinks = newArray();
        return op("mlx_fast_scaled_dot_product_attention", r -> (int) ops.sdpa.invokeExact(r, q.struct(), k.struct(),
                v.struct(), scale, mode, noMask.struct(), noSinks.struct(), stream()));
    }
}
