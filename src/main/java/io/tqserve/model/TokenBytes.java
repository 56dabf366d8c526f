package io.tqserve.model;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The bytes each token contributes to the output text, read from {@code tokenizer.json}: what constrained decoding
 * matches against. The tokenizers library has no call for it (decoding one id returns a string, and a token that
 * is part of a UTF-8 character decodes to U+FFFD), so the vocabulary's pieces are mapped back to bytes the way
 * the decoders do: byte-level BPE (GPT-2's byte-to-unicode table, Llama 3, Qwen, Mistral Tekken) or SentencePiece
 * style ({@code ▁} for a space, {@code <0xNN>} byte-fallback pieces). Special added tokens have no bytes (null);
 * other added tokens (Qwen's {@code <tool_call>}, {@code </think>}) are their content.
 */
public final class TokenBytes {
    private TokenBytes() {
    }

    /** Bytes per token id in [0, size); null where a token has none (special, or no such id). */
    public static byte[][] load(Path modelDir, int size) throws IOException {
        JsonNode tree = JsonMapper.builder().build().readTree(modelDir.resolve("tokenizer.json").toFile());
        return of(tree, size);
    }

    /** Bytes per token id, sized to the largest id in {@code tokenizer.json} (vocabulary or added token) plus one. */
    public static byte[][] load(Path modelDir) throws IOException {
        JsonNode tree = JsonMapper.builder().build().readTree(modelDir.resolve("tokenizer.json").toFile());
        int max = -1;
        JsonNode vocab = tree.path("model").path("vocab");
        if (vocab.isObject()) {
            for (JsonNode id : vocab.values()) {
                max = Math.max(max, id.asInt());
            }
        } else if (vocab.isArray()) {
            max = vocab.size() - 1;
        }
        for (JsonNode t : tree.path("added_tokens")) {
            max = Math.max(max, t.path("id").asInt());
        }
        return of(tree, max + 1);
    }

    static byte[][] of(JsonNode tree, int size) {
        byte[][] out = new byte[size][];
        boolean byteLevel = tree.path("decoder").toString().contains("\"ByteLevel\"");
        Map<Integer, Integer> unicodeToByte = byteLevel ? unicodeToByte() : Map.of();
        JsonNode vocab = tree.path("model").path("vocab");
        if (vocab.isObject()) {
            for (Map.Entry<String, JsonNode> e : vocab.properties()) {
                int id = e.getValue().asInt();
                if (id >= 0 && id < size) {
                    out[id] = byteLevel ? byteLevelPiece(e.getKey(), unicodeToByte) : sentencePiece(e.getKey());
                }
            }
        } else if (vocab.isArray()) {
            for (int id = 0; id < vocab.size() && id < size; id++) {
                String piece = vocab.get(id).get(0).asString();
                out[id] = byteLevel ? byteLevelPiece(piece, unicodeToByte) : sentencePiece(piece);
            }
        }
        for (JsonNode t : tree.path("added_tokens")) {
            int id = t.path("id").asInt();
            if (id >= 0 && id < size) {
                out[id] = t.path("special").asBoolean(false) ? null
                        : t.path("content").asString().getBytes(StandardCharsets.UTF_8);
            }
        }
        return out;
    }

    private static byte[] byteLevelPiece(String piece, Map<Integer, Integer> unicodeToByte) {
        byte[] b = new byte[piece.length()];
        int n = 0;
        for (int i = 0; i < piece.length(); i++) {
            Integer x = unicodeToByte.get((int) piece.charAt(i));
            if (x == null) {
                return null; // not a byte-level piece
            }
            b[n++] = (byte) (int) x;
        }
        return java.util.Arrays.copyOf(b, n);
    }

    private static byte[] sentencePiece(String piece) {
        if (piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
            try {
                return new byte[] {(byte) Integer.parseInt(piece.substring(3, 5), 16)};
            } catch (NumberFormatException e) {
                // an ordinary piece that looks like one
            }
        }
        if (piece.equals("<unk>") || piece.equals("<s>") || piece.equals("</s>")) {
            return null;
        }
        return piece.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8);
    }

    /** GPT-2's {@code bytes_to_unicode}, inverted. */
    private static Map<Integer, Integer> unicodeToByte() {
        Map<Integer, Integer> m = new HashMap<>();
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            m.put(printable ? b : 256 + extra++, b);
        }
        return m;
    }
}
