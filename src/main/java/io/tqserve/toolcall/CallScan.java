package io.tqserve.toolcall;

/**
 * Reads one JSON call object as it arrives, tracking only its structure (nesting, strings, escapes) and its
 * top-level members: whether {@code name} comes first, the name's JSON text, and where the arguments value
 * starts and ends in the text. Jackson parses whole documents or tokens, not the raw spans of a value that
 * is still arriving, which the streamed fragments need; the complete call is still parsed by Jackson.
 */
final class CallScan {
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
}
