package io.tqserve.model;

import java.util.Arrays;

/**
 * Turns a stream of generated token ids into text pieces that are safe to send: a byte-level BPE token can end in
 * the middle of a multi-byte UTF-8 character, and decoding such a prefix yields U+FFFD, so text ending in U+FFFD is
 * held back until the following tokens complete the character. Concatenating every {@link #next} result and the
 * final {@link #flush()} gives {@code tokenizer.decode(allIds)}.
 *
 * <p>Per token it decodes a short window of ids — the tokens since the last point where the text ended on a whole
 * character, plus the chunk before it as context (tokenizers such as SentencePiece decode a word's leading space
 * differently at the start of a sequence) — not the whole sequence. Neither the tokenizers library nor DJL offers
 * incremental decoding, hence this class. One instance per sequence; not thread-safe.
 */
public final class StreamingDetokenizer {

    /** Rebase the window once it holds more than this many tokens and the text ends on a whole character. */
    private static final int REBASE_AFTER = 8;
    /**
     * A window whose text keeps ending in U+FFFD for this many tokens holds invalid bytes (a UTF-8 character is at
     * most 4 bytes and each token at least one), not an unfinished character: emit it as the full decode would.
     */
    private static final int MAX_HELD_TOKENS = 32;

    private static final char REPLACEMENT = '\uFFFD';

    private final Tokenizer tokenizer;
    private final boolean skipSpecialTokens;
    private int[] ids = new int[64];
    private int size;
    private int start;      // first token of the decode window; the text before it ends on a whole character
    private int boundary;   // token count at which the window text last ended on a whole character (>= start)
    private int emitted;    // chars of decode(ids[start, size)) already returned
    private long accepted;  // tokens accepted in total

    /** A detokenizer that drops special tokens from the text, as OpenAI-style responses (and vLLM) do. */
    public StreamingDetokenizer(Tokenizer tokenizer) {
        this(tokenizer, true);
    }

    /**
     * @param skipSpecialTokens drop special tokens (e.g. {@code <|im_end|>}) from the text, as an OpenAI-style
     *                          response wants; {@code false} keeps them, as {@code Tokenizer.decode} does
     */
    public StreamingDetokenizer(Tokenizer tokenizer, boolean skipSpecialTokens) {
        this.tokenizer = tokenizer;
        this.skipSpecialTokens = skipSpecialTokens;
    }

    /** Adds one generated token and returns the text that became safe to emit (often empty, never null). */
    public String next(int tokenId) {
        if (size == ids.length) {
            compact();
        }
        ids[size++] = tokenId;
        accepted++;
        String text = tokenizer.decode(ids, start, size, skipSpecialTokens);
        int held = trailingReplacements(text);
        boolean whole = held == 0;
        if (!whole && size - boundary >= MAX_HELD_TOKENS) {
            held = 0;        // invalid bytes, not an unfinished character
            whole = true;
        }
        int safeEnd = text.length() - held;
        String piece = safeEnd > emitted ? text.substring(emitted, safeEnd) : "";
        emitted = Math.max(emitted, safeEnd);
        if (whole) {
            if (size - start > REBASE_AFTER && boundary > start) {
                // New window: the chunk since the previous whole-character point (context) and what follows.
                start = boundary;
                emitted = tokenizer.decode(ids, start, size, skipSpecialTokens).length();
            }
            boundary = size;
        }
        return piece;
    }

    /**
     * Returns whatever is still held back at the end of the sequence; an unfinished character there decodes to U+FFFD,
     * as in the full decode.
     */
    public String flush() {
        if (size == start) {
            return "";
        }
        String text = tokenizer.decode(ids, start, size, skipSpecialTokens);
        String piece = text.length() > emitted ? text.substring(emitted) : "";
        emitted = Math.max(emitted, text.length());
        return piece;
    }

    /** Number of tokens accepted so far. */
    public long tokenCount() {
        return accepted;
    }

    /** Tokens in the current decode window (bounded; exposed for tests). */
    int windowTokens() {
        return size - start;
    }

    private static int trailingReplacements(String text) {
        int n = 0;
        for (int i = text.length() - 1; i >= 0 && text.charAt(i) == REPLACEMENT; i--) {
            n++;
        }
        return n;
    }

    /** Drops ids before the window (they are never decoded again) or grows the buffer. */
    private void compact() {
        if (start > 0) {
            System.arraycopy(ids, start, ids, 0, size - start);
            size -= start;
            boundary -= start;
            start = 0;
        }
        if (size == ids.length) {
            ids = Arrays.copyOf(ids, ids.length * 2);
        }
    }
}
