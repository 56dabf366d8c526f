package io.tqserve.routing;

/** No enabled lane's KV budget could ever hold the request, however long it waited. */
public final class NoLaneFitsException extends RuntimeException {
    public NoLaneFitsException(String message) {
        super(message);
    }
}
