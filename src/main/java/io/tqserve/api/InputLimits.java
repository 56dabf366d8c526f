package io.tqserve.api;

import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Checks on request text before it reaches a tokenizer or a lane: lengths ({@code tqserve.api.max-prompt-chars},
 * {@code tqserve.api.max-messages}) and well-formed Unicode. JSON can carry an unpaired UTF-16 surrogate
 * ({@code "\ud800"}), which no UTF-8 tokenizer can encode faithfully; such text is a 400 naming the field. The
 * codes follow OpenAI's ({@code string_above_max_length}, {@code array_above_max_length}).
 */
final class InputLimits {
    /** Most characters of one stop sequence. */
    static final int MAX_STOP_CHARS = 1024;
    /** Most characters of the model id a request names (it is echoed in every response chunk). */
    static final int MAX_MODEL_CHARS = 256;

    private InputLimits() {
    }

    /** Returns {@code s} if it has at most {@code max} characters and no unpaired surrogate; else a 400. */
    static String text(String s, String param, int max) {
        if (s.length() > max) {
            throw tooLong(param, s.length(), max);
        }
        int bad = unpairedSurrogate(s);
        if (bad >= 0) {
            throw ApiException.invalid(param, "invalid_unicode", param + " holds an unpaired UTF-16 surrogate at "
                    + "character " + bad + "; send valid Unicode text");
        }
        return s;
    }

    /** A 400 for an array of {@code size} elements when at most {@code max} are accepted. */
    static void count(int size, String param, int max) {
        if (size > max) {
            throw ApiException.invalid(param, "array_above_max_length", "Invalid '" + param + "': array too long. "
                    + "Expected an array with maximum length " + max + ", but got an array with length " + size
                    + " instead (tqserve.api.max-messages).");
        }
    }

    static ApiException tooLong(String param, long length, int max) {
        return ApiException.invalid(param, "string_above_max_length", "Invalid '" + param + "': string too long. "
                + "Expected at most " + max + " characters, but got " + length + " (tqserve.api.max-prompt-chars).");
    }

    /**
     * A 400 naming the first string of a JSON value (object keys included) that holds an unpaired surrogate, by its
     * path ({@code tools[0].function.description}); nothing for null.
     */
    static void unicode(JsonNode node, String path) {
        if (node == null) {
            return;
        }
        if (node.isString()) {
            text(node.asString(), path, Integer.MAX_VALUE);
        } else if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) {
                unicode(node.get(i), path + "[" + i + "]");
            }
        } else if (node.isObject()) {
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                String p = path + "." + e.getKey();
                if (unpairedSurrogate(e.getKey()) >= 0) {
                    throw ApiException.invalid(path, "invalid_unicode", path + " has a key with an unpaired "
                            + "UTF-16 surrogate; send valid Unicode text");
                }
                unicode(e.getValue(), p);
            }
        }
    }

    /** The index of the first unpaired surrogate, or -1. */
    static int unpairedSurrogate(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return i;
            }
            if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }
}
