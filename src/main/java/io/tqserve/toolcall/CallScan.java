package io.tqserve.toolcall;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads one JSON call object as it arrives, tracking only its structure (nesting, strings, escapes) and its
 * top-level members: whether {@code name} comes first, the name's JSON text, and where the arguments value
 * starts and ends in the text. Jackson parses whole documents or tokens, not the raw spans of a value that
 * is still arriving, which the streamed fragments need; the complete call is still parsed by Jackson.
 */
final class CallScan {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A complete call object's name and arguments (JSON object text). */
    record Whole(String name, String arguments) {
    }
    final String argumentsKey;
    final StringBuilder text = new StringBuilder();
    int depth;
    boolean inString;
    boolean escape;
    boolean started;
    boolean done;
    boolean failed;
    // top-level members
    boolean expectKey;
    int keyStart = -1;
    String key;
    boolean firstKeySeen;
    boolean nameFirst;
    int valueStart = -1;
    String valueKey;
    String name;
    int argsStart = -1;
    int argsEnd = -1;
    boolean argsObject;

    CallScan(String argumentsKey) {
        this.argumentsKey = argumentsKey;
    }

    /** Scans {@code s}; returns how many of its characters belong to the call object. */
    int feed(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (done || failed) {
                return i;
            }
            char c = s.charAt(i);
            int at = text.length();
            text.append(c);
            if (!started) {
                if (Character.isWhitespace(c)) {
                    continue;
                }
                if (c != '{') {
                    failed = true;
                    return i + 1;
                }
                started = true;
                depth = 1;
                expectKey = true;
                continue;
            }
            if (inString) {
                if (escape) {
                    escape = false;
                } else if (c == '\\') {
                    escape = true;
                } else if (c == '"') {
                    inString = false;
                    if (depth == 1 && keyStart >= 0) {
                        key = text.substring(keyStart + 1, at);
                        keyStart = -1;
                        if (!firstKeySeen) {
                            firstKeySeen = true;
                            nameFirst = key.equals("name");
                        }
                    } else if (depth == 1 && valueStart >= 0) {
                        endValue(at + 1);
                    }
                }
                continue;
            }
            if (Character.isWhitespace(c)) {
                continue;
            }
            if (depth == 1 && valueStart < 0 && key != null && c != ':' && c != ',' && c != '}') {
                valueStart = at; // the first character of a top-level value
                valueKey = key;
                if (valueKey.equals(argumentsKey) || (valueKey.equals("arguments") && argsStart < 0)) {
                    argsStart = at;
                    argsObject = c == '{';
                }
            }
            switch (c) {
                case '"' -> {
                    inString = true;
                    if (depth == 1 && expectKey) {
                        keyStart = at;
                        expectKey = false;
                    }
                }
                case '{', '[' -> depth++;
                case '}', ']' -> {
                    if (depth == 2 && valueStart >= 0) {
                        depth--;
                        endValue(at + 1);
                    } else if (depth == 1) {
                        if (c != '}') {
                            failed = true;
                            return i + 1;
                        }
                        if (valueStart >= 0) {
                            endValue(at); // a number or literal ends at the object's close
                        }
                        depth = 0;
                        done = true;
                        return i + 1;
                    } else {
                        depth--;
                    }
                }
                case ',' -> {
                    if (depth == 1) {
                        if (valueStart >= 0) {
                            endValue(at);
                        }
                        expectKey = true;
                        key = null;
                    }
                }
                default -> {
                }
            }
        }
        return s.length();
    }

    private void endValue(int end) {
        if (valueKey.equals("name") && name == null) {
            name = text.substring(valueStart, end).strip();
        }
        if (valueStart == argsStart) {
            argsEnd = end;
        }
        valueStart = -1;
        valueKey = null;
        key = null;
    }

    /** The name as a string (its JSON text decoded), or null if it is not a JSON string. */
    String nameText() {
        try {
            JsonNode n = JSON.readTree(name);
            return n.isString() ? n.asString() : null;
        } catch (JacksonException e) {
            return null;
        }
    }

    /**
     * The call object read whole with Jackson (for members not in streaming order): its name and arguments (under
     * {@code key}, else {@code arguments}), or null if it is not a call.
     */
    Whole whole(String key) {
        JsonNode n;
        try {
            n = JSON.readTree(text.toString());
        } catch (JacksonException e) {
            return null;
        }
        if (!n.isObject() || !n.path("name").isString()) {
            return null;
        }
        String args = argumentsText(n.has(key) ? n.get(key) : n.get("arguments"));
        return args == null ? null : new Whole(n.get("name").asString(), args);
    }

    /** The arguments written as something other than an object (a JSON string holding one), as object text. */
    String argumentsNotAnObject() {
        if (argsStart < 0 || argsObject || argsEnd < 0) {
            return "{}";
        }
        try {
            String t = argumentsText(JSON.readTree(text.substring(argsStart, argsEnd)));
            return t == null ? "{}" : t;
        } catch (JacksonException e) {
            return "{}";
        }
    }

    /** The arguments as JSON object text: an object as written, a JSON string holding an object, none as {}. */
    static String argumentsText(JsonNode args) {
        if (args == null || args.isNull()) {
            return "{}";
        }
        if (args.isString()) { // some models write the arguments as a JSON string
            try {
                JsonNode inner = JSON.readTree(args.asString());
                return inner != null && inner.isObject() ? inner.toString() : null;
            } catch (JacksonException e) {
                return null;
            }
        }
        return args.isObject() ? args.toString() : null;
    }
}
