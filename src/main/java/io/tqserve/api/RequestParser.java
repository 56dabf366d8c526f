package io.tqserve.api;

import io.tqserve.engine.Lane;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * Reads and validates the JSON of a chat or completion request into a {@link ParsedRequest}. Written against the
 * JSON tree rather than data binding because OpenAI's fields are polymorphic (content as a string or parts, stop
 * as a string or list, prompt as text or token ids) and every rejection must name its {@code param}. Unknown
 * fields are ignored, as OpenAI clients send many.
 */
final class RequestParser {
    static final int MAX_STOP = 4;
    static final int MAX_LOGIT_BIAS = 300;
    static final int MAX_TOP_LOGPROBS = 20;
    static final int MAX_COMPLETION_LOGPROBS = 5;

    private final int vocabSize;
    private final int maxMessages;
    private final int maxPromptChars;

    RequestParser(int vocabSize, int maxMessages, int maxPromptChars) {
        this.vocabSize = vocabSize;
        this.maxMessages = maxMessages;
        this.maxPromptChars = maxPromptChars;
    }

    ParsedRequest parse(JsonNode body, Endpoint endpoint, String laneHeader) {
        if (body == null || !body.isObject()) {
            throw ApiException.invalid(null, "the request body must be a JSON object");
        }
        String model = optString(body, "model");
        if (model != null) {
            InputLimits.text(model, "model", InputLimits.MAX_MODEL_CHARS);
        }
        ChatRequest chat = null;
        String promptText = null;
        int[] promptIds = null;
        boolean echo = false;
        String kvSnapshot = null;
        int topLogprobs;
        if (endpoint == Endpoint.CHAT) {
            if (body.has("tqserve_kv_snapshot")) {
                throw ApiException.invalid("tqserve_kv_snapshot", "tqserve_kv_snapshot works with /v1/completions only");
            }
            ChatRequestParser.rejectUnsupported(body);
            chat = ChatRequestParser.chat(body, ChatRequestParser.messages(body, maxMessages, maxPromptChars));
            boolean logprobs = optBoolean(body, "logprobs", false);
            Integer top = optInt(body, "top_logprobs", 0, MAX_TOP_LOGPROBS);
            if (top != null && !logprobs) {
                throw ApiException.invalid("top_logprobs", "top_logprobs needs logprobs: true");
            }
            topLogprobs = logprobs ? (top == null ? 0 : top) : -1;
        } else {
            JsonNode prompt = body.get("prompt");
            kvSnapshot = optString(body, "tqserve_kv_snapshot");
            if (kvSnapshot != null && (prompt == null || prompt.isNull()
                    || (prompt.isString() && prompt.asString().isEmpty()))) {
                prompt = null; // continuing a snapshot: the appended prompt may be empty
            } else if (prompt == null || prompt.isNull()) {
                throw ApiException.invalid("prompt", "prompt is required");
            }
            if (prompt == null) {
                promptText = "";
            } else {
            if (prompt.isArray() && prompt.size() == 1 && (prompt.get(0).isString() || prompt.get(0).isArray())) {
                prompt = prompt.get(0); // a batch of one prompt
            }
            if (prompt.isString()) {
                promptText = InputLimits.text(prompt.asString(), "prompt", maxPromptChars);
                if (promptText.isEmpty()) {
                    throw ApiException.invalid("prompt", "prompt must not be empty");
                }
            } else if (prompt.isArray() && !prompt.isEmpty() && prompt.get(0).isNumber()) {
                promptIds = tokenIds(prompt, "prompt");
            } else if (prompt.isArray() && prompt.size() > 1) {
                throw ApiException.invalid("prompt", "only one prompt per request is supported");
            } else {
                throw ApiException.invalid("prompt", "prompt must be a non-empty string or an array of token ids");
            }
            }
            JsonNode suffix = body.get("suffix");
            if (suffix != null && !suffix.isNull() && !(suffix.isString() && suffix.asString().isEmpty())) {
                throw ApiException.invalid("suffix", "suffix is not supported (no fill-in-the-middle models)");
            }
            optInt(body, "best_of", 1, 1); // one candidate per choice
            echo = optBoolean(body, "echo", false);
            Integer lp = optInt(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS);
            topLogprobs = lp == null ? -1 : lp;
        }
        Integer n = optInt(body, "n", 1, Integer.MAX_VALUE);
        if (n != null && n != 1) {
            throw ApiException.invalid("n", "only n=1 is supported");
        }
        Integer maxTokens = optInt(body, "max_completion_tokens", 1, Integer.MAX_VALUE);
        if (maxTokens == null) {
            maxTokens = optInt(body, "max_tokens", 1, Integer.MAX_VALUE);
        }
        Float temperature = optFloat(body, "temperature", 0, 2);
        Float topP = optFloat(body, "top_p", 0, 1);
        if (topP != null && topP == 0f) {
            throw ApiException.invalid("top_p", "top_p must be in (0, 1]");
        }
        Integer topK = optInt(body, "top_k", -1, Integer.MAX_VALUE);
        if (topK != null && topK == -1) {
            topK = 0; // vLLM spells "off" as -1
        }
        Float minP = optFloat(body, "min_p", 0, 1);
        Long seed = optLong(body, "seed");
        Float presence = optFloat(body, "presence_penalty", -2, 2);
        Float frequency = optFloat(body, "frequency_penalty", -2, 2);
        Float repetition = optFloat(body, "repetition_penalty", 0, Float.MAX_VALUE);
        if (repetition != null && repetition == 0f) {
            throw ApiException.invalid("repetition_penalty", "repetition_penalty must be > 0");
        }
        boolean stream = optBoolean(body, "stream", false);
        boolean includeUsage = false;
        JsonNode so = body.get("stream_options");
        if (so != null && !so.isNull()) {
            if (!so.isObject()) {
                throw ApiException.invalid("stream_options", "stream_options must be an object");
            }
            includeUsage = optBoolean(so, "include_usage", false, "stream_options.include_usage");
        }
        optString(body, "user");
        return new ParsedRequest(endpoint, model, promptText, promptIds, maxTokens, temperature, topP, topK,
                minP == null ? 0f : minP, seed, presence == null ? 0f : presence, frequency == null ? 0f : frequency,
                repetition, logitBias(body), stop(body), stream, includeUsage, topLogprobs, echo,
                optBoolean(body, "ignore_eos", false), lane(body, laneHeader), kvSnapshot, chat);
    }

    static String content(JsonNode c, String p) {
        String param = p + ".content";
        if (c == null || c.isNull()) {
            throw ApiException.invalid(param, param + " is required");
        }
        if (c.isString()) {
            return c.asString();
        }
        if (!c.isArray()) {
            throw ApiException.invalid(param, param + " must be a string or an array of text parts");
        }
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < c.size(); j++) {
            JsonNode part = c.get(j);
            String pp = param + "[" + j + "]";
            if (!part.isObject() || !"text".equals(part.path("type").asString(null))) {
                throw ApiException.invalid(pp, pp + " must be a text part ({\"type\": \"text\", \"text\": ...}); "
                        + "this model takes text only");
            }
            JsonNode text = part.get("text");
            if (text == null || !text.isString()) {
                throw ApiException.invalid(pp + ".text", pp + ".text must be a string");
            }
            sb.append(text.asString());
        }
        return sb.toString();
    }

    private int[] tokenIds(JsonNode arr, String param) {
        int[] ids = new int[arr.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode t = arr.get(i);
            if (!t.isIntegralNumber() || !t.canConvertToInt() || t.intValue() < 0 || t.intValue() >= vocabSize) {
                throw ApiException.invalid(param, param + "[" + i + "] must be a token id in [0, " + vocabSize + ")");
            }
            ids[i] = t.intValue();
        }
        return ids;
    }

    private Map<Integer, Float> logitBias(JsonNode body) {
        JsonNode lb = body.get("logit_bias");
        if (lb == null || lb.isNull()) {
            return Map.of();
        }
        if (!lb.isObject()) {
            throw ApiException.invalid("logit_bias", "logit_bias must be an object of token id to bias");
        }
        if (lb.size() > MAX_LOGIT_BIAS) {
            throw ApiException.invalid("logit_bias", "logit_bias may hold at most " + MAX_LOGIT_BIAS + " entries");
        }
        Map<Integer, Float> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : lb.properties()) {
            int id;
            try {
                id = Integer.parseInt(e.getKey());
            } catch (NumberFormatException ex) {
                throw ApiException.invalid("logit_bias", "logit_bias key '" + printable(e.getKey())
                        + "' is not a token id");
            }
            if (id < 0 || id >= vocabSize) {
                throw ApiException.invalid("logit_bias", "logit_bias token id " + id + " is outside [0, " + vocabSize
                        + ")");
            }
            JsonNode v = e.getValue();
            if (!v.isNumber() || !(v.doubleValue() >= -100 && v.doubleValue() <= 100)) {
                throw ApiException.invalid("logit_bias", "logit_bias values must be numbers in [-100, 100]");
            }
            out.put(id, v.floatValue());
        }
        return out;
    }

    private static List<String> stop(JsonNode body) {
        JsonNode s = body.get("stop");
        if (s == null || s.isNull()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        if (s.isString()) {
            out.add(InputLimits.text(s.asString(), "stop", InputLimits.MAX_STOP_CHARS));
        } else if (s.isArray()) {
            if (s.size() > MAX_STOP) {
                throw ApiException.invalid("stop", "stop may hold at most " + MAX_STOP + " sequences");
            }
            for (JsonNode x : s) {
                if (!x.isString()) {
                    throw ApiException.invalid("stop", "stop must be a string or an array of strings");
                }
                out.add(InputLimits.text(x.asString(), "stop", InputLimits.MAX_STOP_CHARS));
            }
        } else {
            throw ApiException.invalid("stop", "stop must be a string or an array of strings");
        }
        for (String x : out) {
            if (x.isEmpty()) {
                throw ApiException.invalid("stop", "stop sequences must not be empty");
            }
        }
        return out;
    }

    private static Optional<Lane.Kind> lane(JsonNode body, String header) {
        String v = optString(body, "tqserve_lane");
        String param = "tqserve_lane";
        if (v == null && header != null) {
            v = header;
            param = "X-Tqserve-Lane";
        }
        if (v == null) {
            return Optional.empty();
        }
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "auto", "" -> Optional.empty();
            case "turbo" -> Optional.of(Lane.Kind.TURBO);
            case "batched" -> Optional.of(Lane.Kind.BATCHED);
            default -> throw ApiException.invalid(param, param + " must be auto, turbo or batched");
        };
    }

    /** Client text quoted in an error message: at most 64 characters, unpaired surrogates replaced. */
    static String printable(String s) {
        String cut = s.length() > 64 ? s.substring(0, 64) + "..." : s;
        StringBuilder sb = new StringBuilder(cut.length());
        cut.codePoints().forEach(cp -> sb.appendCodePoint(Character.isSurrogate((char) cp) && cp < 0x10000 ? 0xFFFD : cp));
        return sb.toString();
    }

    private static String optString(JsonNode body, String name) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isString()) {
            throw ApiException.invalid(name, name + " must be a string");
        }
        return n.asString();
    }

    private static boolean optBoolean(JsonNode body, String name, boolean def) {
        return optBoolean(body, name, def, name);
    }

    private static boolean optBoolean(JsonNode body, String name, boolean def, String param) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return def;
        }
        if (!n.isBoolean()) {
            throw ApiException.invalid(param, param + " must be a boolean");
        }
        return n.booleanValue();
    }

    private static Integer optInt(JsonNode body, String name, int min, int max) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber() || !n.canConvertToExactIntegral() || !n.canConvertToInt()) {
            throw ApiException.invalid(name, name + " must be an integer");
        }
        int v = n.intValue();
        if (v < min || v > max) {
            throw ApiException.invalid(name, name + " must be " + (max == Integer.MAX_VALUE ? ">= " + min
                    : "in [" + min + ", " + max + "]") + ", got " + v);
        }
        return v;
    }

    private static Long optLong(JsonNode body, String name) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber() || !n.canConvertToExactIntegral() || !n.canConvertToLong()) {
            throw ApiException.invalid(name, name + " must be an integer");
        }
        return n.longValue();
    }

    private static Float optFloat(JsonNode body, String name, float min, float max) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber()) {
            throw ApiException.invalid(name, name + " must be a number");
        }
        double v = n.doubleValue();
        if (!(v >= min && v <= max)) {
            throw ApiException.invalid(name, name + " must be " + (max == Float.MAX_VALUE ? ">= " + fmt(min)
                    : "in [" + fmt(min) + ", " + fmt(max) + "]") + ", got " + n.asString());
        }
        return (float) v;
    }

    private static String fmt(float f) {
        return f == Math.rint(f) ? Integer.toString((int) f) : Float.toString(f);
    }
}
