package io.tqserve.toolcall;

/**
 * Reads one JSON object as it arrives (the arguments of a call written as {@code name[ARGS]{...}}), tracking only
 * its structure (nesting, strings, escapes), so that it ends where the object closes, whatever its strings hold.
 * Leading whitespace is skipped and not part of the object. Also what may stand as the name before the marker.
 */
final class ArgumentsScan {
    /** The longest name (with whitespace) before an arguments marker that is still taken for a call. */
    static final int MAX_NAME = 256;

    /** A function name as the {@code name[ARGS]} formats write it: no whitespace, quotes or braces inside. */
    static boolean validName(String name) {
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isWhitespace(c) || c == '"' || c == '{' || c == '[' || c == '<') {
                return false;
            }
        }
        return true;
    }

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
