package io.tqserve.backend.mlx.ffm;

import static io.tqserve.backend.mlx.ffm.MlxLibrary.ARRAY;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.DEVICE;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.DEVICE_INFO;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.INT;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.MAP;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.MAP_ITERATOR;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.PTR;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.SIZE_T;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.STREAM;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.STRING;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.VECTOR_ARRAY;

import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Method handles for MLX-C's object lifecycle, data access, evaluation, streams, devices, memory statistics,
 * errors and safetensors loading (the C declarations are quoted beside each handle). The operations live in
 * {@link MlxOpsNative}.
 */
final class MlxNative {
    // mlx_array mlx_array_new(void)
    final MethodHandle arrayNew;
    // int mlx_array_free(mlx_array arr)
    final MethodHandle arrayFree;
    // int mlx_array_set(mlx_array* arr, const mlx_array src)
    final MethodHandle arraySet;
    // mlx_array mlx_array_new_data(const void* data, const int* shape, int dim, mlx_dtype dtype)
    final MethodHandle arrayNewData;
    // mlx_array mlx_array_new_float32(float val)
    final MethodHandle arrayNewFloat32;
    // mlx_array mlx_array_new_int(int val)
    final MethodHandle arrayNewInt;
    // size_t mlx_array_ndim(const mlx_array arr)
    final MethodHandle arrayNdim;
    // const int* mlx_array_shape(const mlx_array arr)
    final MethodHandle arrayShape;
    // size_t mlx_array_size(const mlx_array arr)
    final MethodHandle arraySize;
    // mlx_dtype mlx_array_dtype(const mlx_array arr)
    final MethodHandle arrayDtype;
    // int mlx_array_eval(mlx_array arr)
    final MethodHandle arrayEval;
    // const float* mlx_array_data_float32(const mlx_array arr)
    final MethodHandle dataFloat32;
    // const uint16_t* mlx_array_data_uint16(const mlx_array arr)
    final MethodHandle dataUint16;
    // const uint8_t* mlx_array_data_uint8(const mlx_array arr)
    final MethodHandle dataUint8;
    // const int32_t* mlx_array_data_int32(const mlx_array arr)
    final MethodHandle dataInt32;
    // const uint32_t* mlx_array_data_uint32(const mlx_array arr)
    final MethodHandle dataUint32;

    // mlx_vector_array mlx_vector_array_new_data(const mlx_array* data, size_t size)
    final MethodHandle vectorArrayNewData;
    // int mlx_vector_array_free(mlx_vector_array vec)
    final MethodHandle vectorArrayFree;
    // mlx_vector_array mlx_vector_array_new(void)
    final MethodHandle vectorArrayNew;
    // size_t mlx_vector_array_size(mlx_vector_array vec)
    final MethodHandle vectorArraySize;
    // int mlx_vector_array_get(mlx_array* res, const mlx_vector_array vec, size_t idx)
    final MethodHandle vectorArrayGet;
    // int mlx_eval(const mlx_vector_array outputs)
    final MethodHandle eval;
    // int mlx_async_eval(const mlx_vector_array outputs)
    final MethodHandle asyncEval;

    // mlx_stream mlx_stream_new(void)
    final MethodHandle streamNew;
    // int mlx_stream_free(mlx_stream stream)
    final MethodHandle streamFree;
    // int mlx_get_default_stream(mlx_stream* stream, mlx_device dev)
    final MethodHandle getDefaultStream;
    // mlx_stream mlx_default_cpu_stream_new(void)
    final MethodHandle defaultCpuStreamNew;
    // int mlx_synchronize(mlx_stream stream)
    final MethodHandle synchronize;
    // mlx_device mlx_device_new(void)
    final MethodHandle deviceNew;
    // int mlx_device_free(mlx_device dev)
    final MethodHandle deviceFree;
    // int mlx_get_default_device(mlx_device* dev)
    final MethodHandle getDefaultDevice;
    // int mlx_device_tostring(mlx_string* str, mlx_device dev)
    final MethodHandle deviceToString;

    // mlx_string mlx_string_new(void)
    final MethodHandle stringNew;
    // const char* mlx_string_data(mlx_string str)
    final MethodHandle stringData;
    // int mlx_string_free(mlx_string str)
    final MethodHandle stringFree;
    // int mlx_version(mlx_string* str)
    final MethodHandle version;

    // int mlx_get_active_memory(size_t* res), mlx_get_peak_memory, mlx_get_cache_memory
    final MethodHandle activeMemory;
    final MethodHandle peakMemory;
    final MethodHandle cacheMemory;
    // int mlx_clear_cache(void)
    final MethodHandle clearCache;
    // int mlx_reset_peak_memory(void)
    final MethodHandle resetPeakMemory;
    // int mlx_get_memory_limit(size_t* res)
    final MethodHandle memoryLimit;
    // int mlx_set_wired_limit(size_t* res, size_t limit), mlx_set_cache_limit, mlx_set_memory_limit: res = previous
    final MethodHandle setWiredLimit;
    final MethodHandle setCacheLimit;
    final MethodHandle setMemoryLimit;

    // mlx_device_info mlx_device_info_new(void)
    final MethodHandle deviceInfoNew;
    // int mlx_device_info_get(mlx_device_info* info, mlx_device dev)
    final MethodHandle deviceInfoGet;
    // int mlx_device_info_free(mlx_device_info info)
    final MethodHandle deviceInfoFree;
    // int mlx_device_info_has_key(bool* exists, mlx_device_info info, const char* key)
    final MethodHandle deviceInfoHasKey;
    // int mlx_device_info_is_string(bool* is_string, mlx_device_info info, const char* key)
    final MethodHandle deviceInfoIsString;
    // int mlx_device_info_get_size(size_t* value, mlx_device_info info, const char* key)
    final MethodHandle deviceInfoGetSize;

    // void mlx_set_error_handler(mlx_error_handler_func handler, void* data, void (*dtor)(void*))
    final MethodHandle setErrorHandler;

    // mlx_map_string_to_array mlx_map_string_to_array_new(void)
    final MethodHandle mapArrayNew;
    // int mlx_map_string_to_array_free(mlx_map_string_to_array map)
    final MethodHandle mapArrayFree;
    // mlx_map_string_to_string mlx_map_string_to_string_new(void)
    final MethodHandle mapStringNew;
    // int mlx_map_string_to_string_free(mlx_map_string_to_string map)
    final MethodHandle mapStringFree;
    // mlx_map_string_to_array_iterator mlx_map_string_to_array_iterator_new(mlx_map_string_to_array map)
    final MethodHandle mapIteratorNew;
    // int mlx_map_string_to_array_iterator_next(const char** key, mlx_array* value,
    //     mlx_map_string_to_array_iterator it)
    final MethodHandle mapIteratorNext;
    // int mlx_map_string_to_array_iterator_free(mlx_map_string_to_array_iterator it)
    final MethodHandle mapIteratorFree;
    // int mlx_load_safetensors(mlx_map_string_to_array* res_0, mlx_map_string_to_string* res_1, const char* file,
    //                          const mlx_stream s)
    final MethodHandle loadSafetensors;

    MlxNative(MlxLibrary lib) {
        arrayNew = lib.returning("mlx_array_new", ARRAY);
        arrayFree = lib.status("mlx_array_free", ARRAY);
        arraySet = lib.status("mlx_array_set", PTR, ARRAY);
        arrayNewData = lib.returning("mlx_array_new_data", ARRAY, PTR, PTR, INT, INT);
        arrayNewFloat32 = lib.returning("mlx_array_new_float32", ARRAY, ValueLayout.JAVA_FLOAT);
        arrayNewInt = lib.returning("mlx_array_new_int", ARRAY, INT);
        arrayNdim = lib.returning("mlx_array_ndim", SIZE_T, ARRAY);
        arrayShape = lib.returning("mlx_array_shape", PTR, ARRAY);
        arraySize = lib.returning("mlx_array_size", SIZE_T, ARRAY);
        arrayDtype = lib.returning("mlx_array_dtype", INT, ARRAY);
        arrayEval = lib.status("mlx_array_eval", ARRAY);
        dataFloat32 = lib.returning("mlx_array_data_float32", PTR, ARRAY);
        dataUint16 = lib.returning("mlx_array_data_uint16", PTR, ARRAY);
        dataUint8 = lib.returning("mlx_array_data_uint8", PTR, ARRAY);
        dataInt32 = lib.returning("mlx_array_data_int32", PTR, ARRAY);
        dataUint32 = lib.returning("mlx_array_data_uint32", PTR, ARRAY);

        vectorArrayNewData = lib.returning("mlx_vector_array_new_data", VECTOR_ARRAY, PTR, SIZE_T);
        vectorArrayFree = lib.status("mlx_vector_array_free", VECTOR_ARRAY);
        vectorArrayNew = lib.returning("mlx_vector_array_new", VECTOR_ARRAY);
        vectorArraySize = lib.returning("mlx_vector_array_size", SIZE_T, VECTOR_ARRAY);
        vectorArrayGet = lib.status("mlx_vector_array_get", PTR, VECTOR_ARRAY, SIZE_T);
        eval = lib.status("mlx_eval", VECTOR_ARRAY);
        asyncEval = lib.status("mlx_async_eval", VECTOR_ARRAY);

        streamNew = lib.returning("mlx_stream_new", STREAM);
        streamFree = lib.status("mlx_stream_free", STREAM);
        getDefaultStream = lib.status("mlx_get_default_stream", PTR, DEVICE);
        defaultCpuStreamNew = lib.returning("mlx_default_cpu_stream_new", STREAM);
        synchronize = lib.status("mlx_synchronize", STREAM);
        deviceNew = lib.returning("mlx_device_new", DEVICE);
        deviceFree = lib.status("mlx_device_free", DEVICE);
        getDefaultDevice = lib.status("mlx_get_default_device", PTR);
        deviceToString = lib.status("mlx_device_tostring", PTR, DEVICE);

        stringNew = lib.returning("mlx_string_new", STRING);
        stringData = lib.returning("mlx_string_data", PTR, STRING);
        stringFree = lib.status("mlx_string_free", STRING);
        version = lib.status("mlx_version", PTR);

        activeMemory = lib.status("mlx_get_active_memory", PTR);
        peakMemory = lib.status("mlx_get_peak_memory", PTR);
        cacheMemory = lib.status("mlx_get_cache_memory", PTR);
        clearCache = lib.status("mlx_clear_cache");
        resetPeakMemory = lib.status("mlx_reset_peak_memory");
        memoryLimit = lib.status("mlx_get_memory_limit", PTR);
        setWiredLimit = lib.status("mlx_set_wired_limit", PTR, SIZE_T);
        setCacheLimit = lib.status("mlx_set_cache_limit", PTR, SIZE_T);
        setMemoryLimit = lib.status("mlx_set_memory_limit", PTR, SIZE_T);

        deviceInfoNew = lib.returning("mlx_device_info_new", DEVICE_INFO);
        deviceInfoGet = lib.status("mlx_device_info_get", PTR, DEVICE);
        deviceInfoFree = lib.status("mlx_device_info_free", DEVICE_INFO);
        deviceInfoHasKey = lib.status("mlx_device_info_has_key", PTR, DEVICE_INFO, PTR);
        deviceInfoIsString = lib.status("mlx_device_info_is_string", PTR, DEVICE_INFO, PTR);
        deviceInfoGetSize = lib.status("mlx_device_info_get_size", PTR, DEVICE_INFO, PTR);

        setErrorHandler = lib.fn("mlx_set_error_handler",
                java.lang.foreign.FunctionDescriptor.ofVoid(PTR, PTR, PTR));

        mapArrayNew = lib.returning("mlx_map_string_to_array_new", MAP);
        mapArrayFree = lib.status("mlx_map_string_to_array_free", MAP);
        mapStringNew = lib.returning("mlx_map_string_to_string_new", MAP);
        mapStringFree = lib.status("mlx_map_string_to_string_free", MAP);
        mapIteratorNew = lib.returning("mlx_map_string_to_array_iterator_new", MAP_ITERATOR, MAP);
        mapIteratorNext = lib.status("mlx_map_string_to_array_iterator_next", PTR, PTR, MAP_ITERATOR);
        mapIteratorFree = lib.status("mlx_map_string_to_array_iterator_free", MAP_ITERATOR);
        loadSafetensors = lib.status("mlx_load_safetensors", PTR, PTR, PTR, STREAM);
    }
}
