package io.tqserve.toolcall;

/**
 * Reads one JSON object as it arrives (the arguments of a call written as {@code name[ARGS]{...}}), tracking only
 * its structure (nesting, strings, escapes), so that it ends where the object closes, whatever its strings hold.
 * Leading whitespace is skipped and not part of the object.
 */
final class ArgumentsScan {
    final StringBuilder text = new StringBuilder();
    private int depth;
    private boolean inString;
    private boolean escape;
    boolean done;
    boolean failed;

    /** Scans {@code s}; returns how many of its characters were read (whitespace before the object included). */
    int feed(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (done || failed) {
                return i;
            }
            char c = s.charAt(i);
            if (depth == 0) {
                if (Character.isWhitespace(c)) {
                    continue;
                }
                if (c != '{') {
                    failed = true;
                    return i;
                }
            }
            text.append(c);
            if (inString) {
                if (escape) {
                    escape = false;
                } else if (c == '\\') {
                    escape = true;
                } else if (c == '"') {
                    inString = false;
                }
                continue;
            }
            switch (c) {
                case '"' -> inString = true;
                case '{', '[' -> depth++;
                case '}', ']' -> {
                    depth--;
                    if (depth == 0) {
                        done = true;
                        return i + 1;
                    }
                }
                default -> {
                }
            }
        }
        return s.length();
    }
}
