package io.tqserve.api;

import io.tqserve.cli.Http1Client;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Generates malformed and hostile HTTP requests for the fuzz test, each invalid by construction: a valid body
 * with one field set to a value outside its contract, a valid body broken at the byte level so that it cannot
 * be JSON (cut short, a control byte or a byte that is never UTF-8 inserted, a structural character replaced),
 * random bytes, bodies that are not objects, nesting deeper than the parser allows, maps and arrays past their
 * limits, oversized bodies, wrong or missing keys, unknown paths and wrong methods, wrong or unparsable
 * {@code Content-Type}s, request targets with encoded slashes and dots (the open health path among them), and
 * HTTP/1.1 framing that RFC 9112 refuses (unknown transfer codings, conflicting framing, missing or repeated
 * {@code Host}, folded headers, bad chunk sizes, unknown versions). Deterministic for a seed.
 */
final class HostileRequests {
    static final String COMPLETIONS = "/v1/completions";
    static final String CHAT = "/v1/chat/completions";
    static final String TOKENIZE = "/tokenize";
    static final String DETOKENIZE = "/detokenize";

    private static final List<String[]> COMMON = fields(
            "temperature", "-1", "2.5", "\"hot\"", "[]", "{}", "true", "1e999", "-0.001",
            "top_p", "0", "1.5", "-0.1", "\"x\"", "0.0",
            "top_k", "-2", "1.5", "\"x\"", "1e20",
            "max_tokens", "0", "-1", "2147483647", "1e30", "99999999999999999999", "\"10\"", "2.5", "5000", "2046",
            "true",
            "n", "0", "2", "1000000", "1e9", "\"1\"",
            "presence_penalty", "3", "-3", "\"x\"", "1e999",
            "frequency_penalty", "2.5", "-2.01",
            "repetition_penalty", "0", "-1", "\"x\"",
            "min_p", "1.5", "-0.1",
            "seed", "\"x\"", "1.5", "1e30", "true",
            "stream", "\"yes\"", "1", "[]",
            "stream_options", "\"x\"", "{\"include_usage\":\"yes\"}", "[]", "1",
            "tqserve_lane", "\"fast\"", "1", "\"TURBOX\"",
            "tqserve_speculative", "\"no\"", "1", "[]",
            "model", "1", "[]", "{}", "\"" + "m".repeat(300) + "\"", "\"\\ud800\"",
            "stop", "1", "[1]", "[\"a\",\"b\",\"c\",\"d\",\"e\"]", "[\"\"]", "\"\"", "\"" + "s".repeat(1025) + "\"",
            "\"\\udfff\"", "{}",
            "logit_bias", "[]", "\"x\"", "{\"abc\":1}", "{\"-1\":1}", "{\"8192\":1}", "{\"1\":101}", "{\"1\":\"x\"}",
            "{\"1\":-100.5}", "{\"1.5\":1}",
            "user", "1", "[]", "{}",
            "ignore_eos", "\"yes\"", "1");
    private static final List<String[]> COMPLETION_ONLY = fields(
            "prompt", "\"\"", "[]", "[-1]", "[8192]", "[1.5]", "{}", "1", "[\"a\",\"b\"]", "\"" + "p".repeat(4097) + "\"",
            "\"\\udc00\"", "[[]]", "[[\"a\"]]", "[5,\"x\"]", "null", "true",
            "echo", "\"yes\"", "1",
            "suffix", "\"x\"",
            "best_of", "2", "0",
            "logprobs", "6", "-1", "\"yes\"", "true", "1e6");
    private static final List<String[]> CHAT_ONLY = fields(
            "messages", "[]", "\"x\"", "{}", "[1]", "[{\"role\":\"user\"}]", "[{\"role\":\"wizard\",\"content\":\"x\"}]",
            "[{\"content\":\"x\"}]", "[{\"role\":\"user\",\"content\":1}]",
            "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]", "[{\"role\":\"user\",\"content\":\"\\ud800\"}]",
            "[{\"role\":\"user\",\"content\":\"" + "c".repeat(4097) + "\"}]",
            "[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
            "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]", "[null]",
            "[{\"role\":null,\"content\":\"x\"}]", "null",
            "logprobs", "\"yes\"", "1",
            "top_logprobs", "21", "-1", "5",
            "max_completion_tokens", "0", "2147483647");
    private static final List<String[]> TOKENIZE_FIELDS = fields(
            "prompt", "1", "[]", "{}", "true", "\"\\ud800\"", "\"" + "p".repeat(4097) + "\"");
    private static final List<String[]> DETOKENIZE_FIELDS = fields(
            "tokens", "\"x\"", "[-1]", "[8192]", "[1.5]", "{}", "null", "[[1]]", "[\"1\"]", "[2147483648]");
    private static final byte[] NEVER_UTF8 = {(byte) 0x80, (byte) 0xBF, (byte) 0xC0, (byte) 0xC1, (byte) 0xF5,
        (byte) 0xFF};

    private final SplittableRandom rnd;
    private final String key;

    HostileRequests(long seed, String key) {
        this.rnd = new SplittableRandom(seed);
        this.key = key;
    }

    /** Field name followed by its bad values, repeated. */
    private static List<String[]> fields(String... spec) {
        List<String[]> out = new ArrayList<>();
        String field = null;
        for (String s : spec) {
            if (Character.isLetter(s.charAt(0)) && !s.equals("true") && !s.equals("null")) {
                field = s;
            } else {
                out.add(new String[] {field, s});
            }
        }
        return out;
    }

    /**
     * A request: path and raw bytes.
     *
     * @param malformedUri the request target is not a valid URI ({@code %zz}), or its framing is one Netty's decoder
     *                     refuses: answered 400 with an empty body before any filter or handler runs
     * @param status       the status the request must get (a framing refusal: 400, 501, 505), or 0 for any 4xx
     */
    record Request(String what, String path, byte[] bytes, boolean malformedUri, int status) {
        Request(String what, String path, byte[] bytes) {
            this(what, path, bytes, false, 0);
        }

        Request(String what, String path, byte[] bytes, boolean malformedUri) {
            this(what, path, bytes, malformedUri, 0);
        }
    }

    Request next() {
        int kind = rnd.nextInt(100);
        if (kind < 3) {
            return badFraming();
        }
        if (kind < 5) {
            return encodedPath();
        }
        if (kind < 45) {
            return hostileField();
        }
        if (kind < 65) {
            return brokenJson();
        }
        if (kind < 71) {
            return notAnObject();
        }
        if (kind < 78) {
            return wrongAuth();
        }
        if (kind < 86) {
            return wrongPathOrMethod();
        }
        if (kind < 92) {
            return deepNesting();
        }
        if (kind < 98) {
            return pastLimits();
        }
        return oversized();
    }

    private Map<String, String> base(String path) {
        Map<String, String> m = new LinkedHashMap<>();
        switch (path) {
            case COMPLETIONS -> {
                m.put("prompt", "\"The ls command\"");
                m.put("max_tokens", "4");
                m.put("temperature", "0");
            }
            case CHAT -> {
                m.put("messages", "[{\"role\":\"user\",\"content\":\"hi\"}]");
                m.put("max_tokens", "4");
            }
            case TOKENIZE -> m.put("prompt", "\"The ls command\"");
            default -> m.put("tokens", "[5,6,7]");
        }
        return m;
    }

    private String anyPath() {
        return switch (rnd.nextInt(4)) {
            case 0 -> COMPLETIONS;
            case 1 -> CHAT;
            case 2 -> TOKENIZE;
            default -> DETOKENIZE;
        };
    }

    private String json(Map<String, String> fields) {
        List<Map.Entry<String, String>> entries = new ArrayList<>(fields.entrySet());
        for (int i = entries.size() - 1; i > 0; i--) { // shuffle: field order must not matter
            int j = rnd.nextInt(i + 1);
            var t = entries.get(i);
            entries.set(i, entries.get(j));
            entries.set(j, t);
        }
        StringBuilder sb = new StringBuilder("{");
        for (var e : entries) {
            sb.append(sb.length() == 1 ? "" : ",").append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return sb.append('}').toString();
    }

    private byte[] post(String path, byte[] body, String... extraHeaders) {
        List<String> h = new ArrayList<>(List.of("Authorization", "Bearer " + key));
        String[] types = {"application/json", "application/json; charset=utf-8", "text/plain", null, "garbage",
            "application/json; charset=x-bogus", "application/json; charset=\"utf-8", "application/x-www-form-urlencoded"};
        String type = types[rnd.nextInt(types.length)];
        if (type != null) {
            h.add("Content-Type");
            h.add(type);
        }
        h.addAll(List.of(extraHeaders));
        return Http1Client.request("POST", path, body, h.toArray(String[]::new));
    }

    private Request hostileField() {
        String path = anyPath();
        List<String[]> pool = new ArrayList<>();
        switch (path) {
            case COMPLETIONS -> {
                pool.addAll(COMMON);
                pool.addAll(COMPLETION_ONLY);
            }
            case CHAT -> {
                pool.addAll(COMMON);
                pool.addAll(CHAT_ONLY);
            }
            case TOKENIZE -> {
                pool.addAll(TOKENIZE_FIELDS);
                for (String[] m : CHAT_ONLY) {
                    if (m[0].equals("messages") && !m[1].equals("null")) {
                        pool.add(m);
                    }
                }
            }
            default -> pool.addAll(DETOKENIZE_FIELDS);
        }
        String[] f = pool.get(rnd.nextInt(pool.size()));
        Map<String, String> body = base(path);
        if (path.equals(TOKENIZE) && f[0].equals("messages")) {
            body.remove("prompt");
        }
        body.put(f[0], f[1]);
        return new Request(f[0] + "=" + abbreviate(f[1]), path, post(path, json(body).getBytes(StandardCharsets.UTF_8)));
    }

    private Request brokenJson() {
        String path = anyPath();
        byte[] valid = json(base(path)).getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        String what;
        switch (rnd.nextInt(5)) {
            case 0 -> { // a strict prefix of an object is never a JSON value
                int n = 1 + rnd.nextInt(valid.length - 1);
                b.write(valid, 0, n);
                what = "cut at " + n;
            }
            case 1 -> { // a control byte is invalid inside strings (unescaped) and outside them
                int at = rnd.nextInt(valid.length + 1);
                int[] controls = {0x00, 0x01, 0x07, 0x08, 0x0B, 0x0C, 0x0E, 0x1B, 0x1F};
                b.write(valid, 0, at);
                b.write(controls[rnd.nextInt(controls.length)]);
                b.write(valid, at, valid.length - at);
                what = "control byte at " + at;
            }
            case 2 -> { // a byte that never occurs in UTF-8, or a lone continuation byte
                int at = rnd.nextInt(valid.length + 1);
                b.write(valid, 0, at);
                b.write(NEVER_UTF8[rnd.nextInt(NEVER_UTF8.length)]);
                b.write(valid, at, valid.length - at);
                what = "bad UTF-8 byte at " + at;
            }
            case 3 -> { // a structural character replaced by a letter (the bases hold none inside strings)
                List<Integer> structural = new ArrayList<>();
                for (int i = 0; i < valid.length; i++) {
                    if ("{}[]:,".indexOf(valid[i]) >= 0) {
                        structural.add(i);
                    }
                }
                int at = structural.get(rnd.nextInt(structural.size()));
                byte[] copy = valid.clone();
                copy[at] = (byte) ('a' + rnd.nextInt(26));
                b.writeBytes(copy);
                what = "structure broken at " + at;
            }
            default -> { // random bytes
                byte[] junk = new byte[1 + rnd.nextInt(200)];
                for (int i = 0; i < junk.length; i++) {
                    junk[i] = (byte) rnd.nextInt(256);
                }
                if (junk[0] == '{') {
                    junk[0] = '(';
                }
                b.writeBytes(junk);
                what = "random bytes";
            }
        }
        return new Request(what, path, post(path, b.toByteArray()));
    }

    private Request notAnObject() {
        String[] bodies = {"[]", "\"prompt\"", "42", "null", "true", "[{\"prompt\":\"x\"}]", "   ", "", "\n", "{}"};
        String path = anyPath();
        String body = bodies[rnd.nextInt(bodies.length)];
        return new Request("body " + body.strip(), path, post(path, body.getBytes(StandardCharsets.UTF_8)));
    }

    private Request wrongAuth() {
        String path = anyPath();
        byte[] body = json(base(path)).getBytes(StandardCharsets.UTF_8);
        String[][] auths = {{}, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic " + key},
            {"Authorization", "Bearer " + key + " extra"}, {"Authorization", "Bearer"}, {"Authorization", "bearer "},
            {"X-Api-Key", "wrong"}, {"X-Api-Key", key + " extra"}, {"X-Api-Key", ""}}; // x-api-key is a key (Anthropic)
        String[] a = auths[rnd.nextInt(auths.length)];
        List<String> h = new ArrayList<>(List.of("Content-Type", "application/json"));
        h.addAll(List.of(a));
        return new Request("auth " + (a.length == 0 ? "none" : a[1].replace(key, "KEY")), path,
                Http1Client.request("POST", path, body, h.toArray(String[]::new)));
    }

    private Request wrongPathOrMethod() {
        String[] paths = {"/v1/", "/v1/completions/x", "/tokenize/", "/v2/completions", "/v1/chat/completion",
            "/v1/%00", "/v1/%zz", "/v1/..%2f..%2fetc%2fpasswd", "/v1/" + "a".repeat(2000), "/v1/models/%ff%fe",
            "/v1/kv/snapshots/..%2f..%2fx", "/detokenize/../tokenize", "/favicon.ico", "/v1/chat/completions?x=%"};
        String[] methods = {"GET", "PUT", "DELETE", "PATCH"};
        if (rnd.nextBoolean()) {
            String path = paths[rnd.nextInt(paths.length)];
            return new Request("path " + abbreviate(path), path, post(path, "{}".getBytes(StandardCharsets.UTF_8)),
                    path.contains("%zz") || path.endsWith("%"));
        }
        String path = rnd.nextBoolean() ? COMPLETIONS : rnd.nextBoolean() ? CHAT : TOKENIZE;
        String m = methods[rnd.nextInt(methods.length)];
        return new Request(m + " " + path, path, Http1Client.request(m, path, null, "Authorization", "Bearer " + key));
    }

    private Request deepNesting() {
        String path = anyPath();
        int depth = 33 + rnd.nextInt(3000);
        StringBuilder open = new StringBuilder();
        StringBuilder close = new StringBuilder();
        for (int i = 0; i < depth; i++) {
            if (rnd.nextBoolean()) {
                open.append('[');
                close.insert(0, ']');
            } else {
                open.append("{\"a\":");
                close.insert(0, '}');
            }
        }
        Map<String, String> body = base(path);
        body.put("x", open + "1" + close);
        return new Request("nesting " + depth, path, post(path, json(body).getBytes(StandardCharsets.UTF_8)));
    }

    private Request pastLimits() {
        if (rnd.nextBoolean()) {
            int n = 301 + rnd.nextInt(3000);
            StringBuilder sb = new StringBuilder("{");
            for (int i = 0; i < n; i++) {
                sb.append(i == 0 ? "" : ",").append('"').append(rnd.nextInt(8192)).append("\":")
                        .append(rnd.nextInt(201) - 100);
            }
            Map<String, String> body = base(COMPLETIONS);
            body.put("logit_bias", sb.append('}').toString());
            // duplicate token ids are possible: then the body is a duplicate-name error, also a 400
            return new Request("logit_bias of " + n, COMPLETIONS,
                    post(COMPLETIONS, json(body).getBytes(StandardCharsets.UTF_8)));
        }
        int n = 9 + rnd.nextInt(500);
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : ",").append("{\"role\":\"user\",\"content\":\"m\"}");
        }
        String path = rnd.nextBoolean() ? CHAT : TOKENIZE;
        Map<String, String> body = new LinkedHashMap<>();
        body.put("messages", sb.append(']').toString());
        return new Request(n + " messages", path, post(path, json(body).getBytes(StandardCharsets.UTF_8)));
    }

    private Request oversized() {
        String path = anyPath();
        Map<String, String> body = base(path);
        body.put("user", "\"" + "u".repeat(HardenedServingContext.BODY_LIMIT + rnd.nextInt(4096)) + "\"");
        return new Request("oversized", path, post(path, json(body).getBytes(StandardCharsets.UTF_8)));
    }

    /** Request targets that path matchers decode in surprising ways; with or without the key. */
    private Request encodedPath() {
        String[] paths = {"/actuator/health/x%2fy", "/actuator/health/..%2fprometheus", "/actuator/health/liveness%2fx",
            "/actuator/health/%2e%2e/prometheus", "/actuator/health/x%5cy", "/actuator/health//liveness",
            "/actuator/health/x;y", "/v1/kv/snapshots/..%2f..%2fx", "/v1/models/%2e%2e", "/v1/%25zz"};
        String path = paths[rnd.nextInt(paths.length)];
        byte[] req = rnd.nextBoolean() ? Http1Client.request("GET", path, null)
                : Http1Client.request("GET", path, null, "Authorization", "Bearer " + key);
        return new Request("encoded path " + path, path, req);
    }

    /** HTTP/1.1 framing that RFC 9112 refuses; each closes its connection. */
    private Request badFraming() {
        String body = "{\"prompt\":\"The ls command\",\"max_tokens\":2}";
        String api = "Authorization: Bearer " + key + "\r\nContent-Type: application/json\r\n";
        String post = "POST " + COMPLETIONS + " HTTP/1.1\r\n";
        String host = "Host: localhost\r\n";
        String length = "Content-Length: " + body.length() + "\r\n";
        String chunked = Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n";
        // what, raw request, expected status, answered by Netty's decoder (empty body)
        Object[][] shapes = {
            {"xchunked with Content-Length", post + host + api + "Transfer-Encoding: xchunked\r\n" + length + "\r\n"
                    + body, 400, false},
            {"gzip, chunked", post + host + api + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked, 501, false},
            {"chunked twice", post + host + api + "Transfer-Encoding: chunked, chunked\r\n\r\n" + chunked, 400, false},
            {"no Host", post + api + length + "\r\n" + body, 400, false},
            {"two Hosts", post + host + "Host: other\r\n" + api + length + "\r\n" + body, 400, false},
            {"HTTP/9.9", "GET /v1/models HTTP/9.9\r\n" + host + "\r\n", 505, false},
            {"folded header", post + host + api + "X-Folded: a\r\n b\r\n" + length + "\r\n" + body, 400, false},
            {"chunk size ' e'", post + host + api + "Transfer-Encoding: chunked\r\n\r\n e\r\n" + body.substring(0, 14)
                    + "\r\n0\r\n\r\n", 400, true},
            {"chunk size zz", post + host + api + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body
                    + "\r\n0\r\n\r\n", 400, true},
            {"chunked with Content-Length", post + host + api + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                    + chunked, 400, true},
            {"two Content-Lengths", post + host + api + length + "Content-Length: 3\r\n\r\n" + body, 400, true},
        };
        Object[] shape = shapes[rnd.nextInt(shapes.length)];
        return new Request((String) shape[0], COMPLETIONS, ((String) shape[1]).getBytes(StandardCharsets.ISO_8859_1),
                (Boolean) shape[3], (Integer) shape[2]);
    }

    private static String abbreviate(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }
}
