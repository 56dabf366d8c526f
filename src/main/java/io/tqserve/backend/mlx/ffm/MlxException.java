package io.tqserve.backend.mlx.ffm;

/** A failed MLX-C call: the function name and the message MLX passed to the error handler. */
public final class MlxException extends RuntimeException {
    public MlxException(String message) {
        super(message);
    }

    public MlxException(String message, Throwable cause) {
        super(message, cause);
    }
}
