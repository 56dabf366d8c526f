package io.tqserve.backend.mlx.ffm;

import static io.tqserve.backend.mlx.ffm.MlxLibrary.ARRAY;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.INT;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.OPTIONAL_DTYPE;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.OPTIONAL_FLOAT;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.OPTIONAL_INT;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.PTR;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.SIZE_T;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.STREAM;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.VECTOR_ARRAY;

import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Method handles for the MLX-C operations the backend uses ({@code mlx/c/ops.h}, {@code mlx/c/fast.h}). Every
 * one returns an {@code int} status and writes its result through the first pointer, {@code mlx_array* res};
 * the last argument is the stream.
 */
final class MlxOpsNative {
    private static final ValueLayout BOOL = ValueLayout.JAVA_BOOLEAN;
    private static final ValueLayout FLOAT = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout DOUBLE = ValueLayout.JAVA_DOUBLE;

    // int f(mlx_array* res, const mlx_array a, const mlx_stream s)
    final MethodHandle sqrt;
    final MethodHandle sigmoid;
    final MethodHandle copy;
    final MethodHandle isnan;
    // int f(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)
    final MethodHandle add;
    final MethodHandle subtract;
    final MethodHandle multiply;
    final MethodHandle divide;
    final MethodHandle maximum;
    final MethodHandle minimum;
    final MethodHandle greater;
    final MethodHandle matmul;
    final MethodHandle leftShift;
    final MethodHandle rightShift;
    final MethodHandle bitwiseAnd;
    final MethodHandle equal;
    final MethodHandle less;
    final MethodHandle greaterEqual;
    final MethodHandle logicalAnd;
    // int mlx_take_along_axis(mlx_array* res, const mlx_array a, const mlx_array indices, int axis, const mlx_stream s)
    final MethodHandle takeAlongAxis;
    // int mlx_argsort_axis(mlx_array* res, const mlx_array a, int axis, const mlx_stream s)
    final MethodHandle argsortAxis;
    // int mlx_cumsum(mlx_array* res, const mlx_array a, int axis, bool reverse, bool inclusive, const mlx_stream s)
    final MethodHandle cumsum;
    // int mlx_logsumexp_axis(mlx_array* res, const mlx_array a, int axis, bool keepdims, const mlx_stream s)
    final MethodHandle logsumexpAxis;
    // int mlx_random_key(mlx_array* res, uint64_t seed)
    final MethodHandle randomKey;
    // int mlx_random_split(mlx_array* res_0, mlx_array* res_1, const mlx_array key, const mlx_stream s)
    final MethodHandle randomSplit;
    // int mlx_random_categorical(mlx_array* res, const mlx_array logits, int axis, const mlx_array key,
    //                            const mlx_stream s)
    final MethodHandle randomCategorical;
    // int mlx_where(mlx_array* res, const mlx_array condition, const mlx_array x, const mlx_array y,
    //     const mlx_stream s)
    final MethodHandle where;
    // int mlx_round(mlx_array* res, const mlx_array a, int decimals, const mlx_stream s)
    final MethodHandle round;
    // int mlx_astype / mlx_view(mlx_array* res, const mlx_array a, mlx_dtype dtype, const mlx_stream s)
    final MethodHandle astype;
    final MethodHandle view;
    // int mlx_reshape(mlx_array* res, const mlx_array a, const int* shape, size_t shape_num, const mlx_stream s)
    final MethodHandle reshape;
    // int mlx_transpose_axes(mlx_array* res, const mlx_array a, const int* axes, size_t axes_num, const mlx_stream s)
    final MethodHandle transposeAxes;
    // int mlx_slice(mlx_array* res, const mlx_array a, const int* start, size_t start_num, const int* stop,
    //               size_t stop_num, const int* strides, size_t strides_num, const mlx_stream s)
    final MethodHandle slice;
    // int mlx_slice_update(mlx_array* res, const mlx_array src, const mlx_array update, const int* start,
    //                      size_t start_num, const int* stop, size_t stop_num, const int* strides,
    //                      size_t strides_num, const mlx_stream s)
    final MethodHandle sliceUpdate;
    // int mlx_concatenate_axis(mlx_array* res, const mlx_vector_array arrays, int axis, const mlx_stream s)
    final MethodHandle concatenateAxis;
    // int mlx_take_axis(mlx_array* res, const mlx_array a, const mlx_array indices, int axis, const mlx_stream s)
    final MethodHandle takeAxis;
    // int f(mlx_array* res, const mlx_array a, int axis, bool keepdims, const mlx_stream s)
    final MethodHandle sumAxis;
    final MethodHandle maxAxis;
    final MethodHandle minAxis;
    final MethodHandle argmaxAxis;
    // int mlx_softmax_axis(mlx_array* res, const mlx_array a, int axis, bool precise, const mlx_stream s)
    final MethodHandle softmaxAxis;
    // int mlx_hadamard_transform(mlx_array* res, const mlx_array a, mlx_optional_float scale, const mlx_stream s)
    final MethodHandle hadamardTransform;
    // int mlx_expand_dims(mlx_array* res, const mlx_array a, int axis, const mlx_stream s)
    final MethodHandle expandDims;
    // int mlx_arange(mlx_array* res, double start, double stop, double step, mlx_dtype dtype, const mlx_stream s)
    final MethodHandle arange;
    // int mlx_zeros(mlx_array* res, const int* shape, size_t shape_num, mlx_dtype dtype, const mlx_stream s)
    final MethodHandle zeros;
    // int mlx_contiguous(mlx_array* res, const mlx_array a, bool allow_col_major, const mlx_stream s)
    final MethodHandle contiguous;
    // int mlx_fast_rms_norm(mlx_array* res, const mlx_array x, const mlx_array weight, float eps, const mlx_stream s)
    final MethodHandle rmsNorm;
    // int mlx_fast_rope(mlx_array* res, const mlx_array x, int dims, bool traditional, mlx_optional_float base,
    //                   float scale, int offset, const mlx_array freqs, const mlx_stream s)
    final MethodHandle rope;
    // int mlx_fast_rope_dynamic(mlx_array* res, const mlx_array x, int dims, bool traditional,
    //     mlx_optional_float base, float scale, const mlx_array offset, const mlx_array freqs, const mlx_stream s)
    final MethodHandle ropeDynamic;
    // int mlx_scatter_single(mlx_array* res, const mlx_array a, const mlx_array indices, const mlx_array updates,
    //     int axis, const mlx_stream s)
    final MethodHandle scatterSingle;
    // int mlx_fast_scaled_dot_product_attention(mlx_array* res, const mlx_array queries, const mlx_array keys,
    //     const mlx_array values, float scale, const char* mask_mode, const mlx_array mask_arr,
    //     const mlx_array sinks, const mlx_stream s)
    final MethodHandle sdpa;
    // int mlx_quantized_matmul(mlx_array* res, const mlx_array x, const mlx_array w, const mlx_array scales,
    //     const mlx_array biases /* may be null */, bool transpose, mlx_optional_int group_size,
    //     mlx_optional_int bits, const char* mode, const mlx_stream s)
    final MethodHandle quantizedMatmul;
    // int mlx_dequantize(mlx_array* res, const mlx_array w, const mlx_array scales,
    //     const mlx_array biases /* may be null */, mlx_optional_int group_size, mlx_optional_int bits,
    //     const char* mode, const mlx_array global_scale /* may be null */, mlx_optional_dtype dtype,
    //     const mlx_stream s)
    final MethodHandle dequantize;
    // int mlx_quantize(mlx_vector_array* res, const mlx_array w, mlx_optional_int group_size, mlx_optional_int bits,
    //     const char* mode, const mlx_array global_scale /* may be null */, const mlx_stream s)
    final MethodHandle quantize;

    MlxOpsNative(MlxLibrary lib) {
        sqrt = unary(lib, "mlx_sqrt");
        sigmoid = unary(lib, "mlx_sigmoid");
        copy = unary(lib, "mlx_copy");
        isnan = unary(lib, "mlx_isnan");
        where = lib.status("mlx_where", PTR, ARRAY, ARRAY, ARRAY, STREAM);
        add = binary(lib, "mlx_add");
        subtract = binary(lib, "mlx_subtract");
        multiply = binary(lib, "mlx_multiply");
        divide = binary(lib, "mlx_divide");
        maximum = binary(lib, "mlx_maximum");
        minimum = binary(lib, "mlx_minimum");
        greater = binary(lib, "mlx_greater");
        matmul = binary(lib, "mlx_matmul");
        leftShift = binary(lib, "mlx_left_shift");
        rightShift = binary(lib, "mlx_right_shift");
        bitwiseAnd = binary(lib, "mlx_bitwise_and");
        equal = binary(lib, "mlx_equal");
        less = binary(lib, "mlx_less");
        greaterEqual = binary(lib, "mlx_greater_equal");
        logicalAnd = binary(lib, "mlx_logical_and");
        takeAlongAxis = lib.status("mlx_take_along_axis", PTR, ARRAY, ARRAY, INT, STREAM);
        argsortAxis = lib.status("mlx_argsort_axis", PTR, ARRAY, INT, STREAM);
        cumsum = lib.status("mlx_cumsum", PTR, ARRAY, INT, BOOL, BOOL, STREAM);
        logsumexpAxis = lib.status("mlx_logsumexp_axis", PTR, ARRAY, INT, BOOL, STREAM);
        randomKey = lib.status("mlx_random_key", PTR, ValueLayout.JAVA_LONG);
        randomSplit = lib.status("mlx_random_split", PTR, PTR, ARRAY, STREAM);
        randomCategorical = lib.status("mlx_random_categorical", PTR, ARRAY, INT, ARRAY, STREAM);
        round = lib.status("mlx_round", PTR, ARRAY, INT, STREAM);
        astype = lib.status("mlx_astype", PTR, ARRAY, INT, STREAM);
        view = lib.status("mlx_view", PTR, ARRAY, INT, STREAM);
        reshape = lib.status("mlx_reshape", PTR, ARRAY, PTR, SIZE_T, STREAM);
        transposeAxes = lib.status("mlx_transpose_axes", PTR, ARRAY, PTR, SIZE_T, STREAM);
        slice = lib.status("mlx_slice", PTR, ARRAY, PTR, SIZE_T, PTR, SIZE_T, PTR, SIZE_T, STREAM);
        sliceUpdate = lib.status("mlx_slice_update", PTR, ARRAY, ARRAY, PTR, SIZE_T, PTR, SIZE_T, PTR, SIZE_T, STREAM);
        concatenateAxis = lib.status("mlx_concatenate_axis", PTR, VECTOR_ARRAY, INT, STREAM);
        takeAxis = lib.status("mlx_take_axis", PTR, ARRAY, ARRAY, INT, STREAM);
        sumAxis = lib.status("mlx_sum_axis", PTR, ARRAY, INT, BOOL, STREAM);
        maxAxis = lib.status("mlx_max_axis", PTR, ARRAY, INT, BOOL, STREAM);
        minAxis = lib.status("mlx_min_axis", PTR, ARRAY, INT, BOOL, STREAM);
        argmaxAxis = lib.status("mlx_argmax_axis", PTR, ARRAY, INT, BOOL, STREAM);
        softmaxAxis = lib.status("mlx_softmax_axis", PTR, ARRAY, INT, BOOL, STREAM);
        hadamardTransform = lib.status("mlx_hadamard_transform", PTR, ARRAY, OPTIONAL_FLOAT, STREAM);
        expandDims = lib.status("mlx_expand_dims", PTR, ARRAY, INT, STREAM);
        arange = lib.status("mlx_arange", PTR, DOUBLE, DOUBLE, DOUBLE, INT, STREAM);
        zeros = lib.status("mlx_zeros", PTR, PTR, SIZE_T, INT, STREAM);
        contiguous = lib.status("mlx_contiguous", PTR, ARRAY, BOOL, STREAM);
        rmsNorm = lib.status("mlx_fast_rms_norm", PTR, ARRAY, ARRAY, FLOAT, STREAM);
        rope = lib.status("mlx_fast_rope", PTR, ARRAY, INT, BOOL, OPTIONAL_FLOAT, FLOAT, INT, ARRAY, STREAM);
        ropeDynamic = lib.status("mlx_fast_rope_dynamic", PTR, ARRAY, INT, BOOL, OPTIONAL_FLOAT, FLOAT, ARRAY, ARRAY,
                STREAM);
        scatterSingle = lib.status("mlx_scatter_single", PTR, ARRAY, ARRAY, ARRAY, INT, STREAM);
        sdpa = lib.status("mlx_fast_scaled_dot_product_attention", PTR, ARRAY, ARRAY, ARRAY, FLOAT, PTR, ARRAY, ARRAY,
                STREAM);
        quantizedMatmul = lib.status("mlx_quantized_matmul", PTR, ARRAY, ARRAY, ARRAY, ARRAY, BOOL, OPTIONAL_INT,
                OPTIONAL_INT, PTR, STREAM);
        dequantize = lib.status("mlx_dequantize", PTR, ARRAY, ARRAY, ARRAY, OPTIONAL_INT, OPTIONAL_INT, PTR, ARRAY,
                OPTIONAL_DTYPE, STREAM);
        quantize = lib.status("mlx_quantize", PTR, ARRAY, OPTIONAL_INT, OPTIONAL_INT, PTR, ARRAY, STREAM);
    }

    private static MethodHandle unary(MlxLibrary lib, String name) {
        return lib.status(name, PTR, ARRAY, STREAM);
    }

    private static MethodHandle binary(MlxLibrary lib, String name) {
        return lib.status(name, PTR, ARRAY, ARRAY, STREAM);
    }
}
