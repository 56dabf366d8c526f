package io.tqserve.api.openai;

/** {@code {"error": {"message", "type", "param", "code"}}} as OpenAI sends it. */
public record ErrorBody(Detail error) {
    /**
     * @param message what went wrong, for a human
     * @param type    e.g. invalid_request_error, server_error
     * @param param   the offending request field, or null
     * @param code    a machine-readable code, or null
     */
    public record Detail(String message, String type, String param, String code) {
    }

    public static ErrorBody of(String message, String type, String param, String code) {
        return new ErrorBody(new Detail(message, type, param, code));
    }
}
