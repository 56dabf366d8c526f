package io.tqserve.api;

/** The generation endpoints. Requests of the last two are translated into chat requests below the API. */
public enum Endpoint {
    /** POST /v1/chat/completions. */
    CHAT("chatcmpl-", "chat"),
    /** POST /v1/completions. */
    COMPLETION("cmpl-", "completions"),
    /** POST /v1/responses (OpenAI's Responses API). */
    RESPONSES("resp_", "responses"),
    /** POST /v1/messages (Anthropic's Messages API). */
    MESSAGES("msg_", "messages");

    private final String idPrefix;
    private final String wireName;

    Endpoint(String idPrefix, String wireName) {
        this.idPrefix = idPrefix;
        this.wireName = wireName;
    }

    public String idPrefix() {
        return idPrefix;
    }

    /** The name in logs and metric tags. */
    public String wireName() {
        return wireName;
    }
}
