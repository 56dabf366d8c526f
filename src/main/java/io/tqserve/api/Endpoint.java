package io.tqserve.api;

/** The two generation endpoints. */
public enum Endpoint {
    /** POST /v1/chat/completions. */
    CHAT("chatcmpl-"),
    /** POST /v1/completions. */
    COMPLETION("cmpl-");

    private final String idPrefix;

    Endpoint(String idPrefix) {
        this.idPrefix = idPrefix;
    }

    public String idPrefix() {
        return idPrefix;
    }
}
