package io.tqserve.model;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A Hugging Face {@code tokenizer.json} tokenizer, run by the Rust {@code tokenizers} library through DJL's JNI
 * binding (writing BPE/Unigram/WordPiece plus normalizers and pre-tokenizers by hand would be a large, error-prone
 * re-implementation of a well-kept library).
 *
 * <p>Built with truncation and padding OFF (DJL truncates to 512 tokens by default) and, unless asked, without
 * adding special tokens on encode: chat templates already contain them, and {@code reference_outputs.json} ids are
 * "no special tokens added". Special-token ids, BOS and EOS come from {@code tokenizer.json},
 * {@code tokenizer_config.json} and {@code generation_config.json}.
 *
 * <p>Holds a native handle: {@link #close()} it. Encode and decode are thread-safe (the Rust tokenizer is
 * immutable once built).
 */
public final class Tokenizer implements AutoCloseable {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    /** Starts a mark of {@link #markSpecialText} (a private-use character; the next one names the token). */
    public static final char MARK = '\uE000';

    private final HuggingFaceTokenizer tokenizer;
    private final boolean addSpecialTokens;
    private final int vocabSize;
    private final Map<String, Integer> specialTokens; // content -> id, in tokenizer.json order
    private final Set<Integer> specialTokenIds;
    private final OptionalInt bosTokenId;
    private final int[] eosTokenIds;
    private final List<String> specialByLength; // special-token texts, longest first
    private final byte[] plainJson;             // tokenizer.json without the special added tokens
    private volatile HuggingFaceTokenizer plain; // built from plainJson on first use

    private Tokenizer(HuggingFaceTokenizer tokenizer, boolean addSpecialTokens, int vocabSize,
            Map<String, Integer> specialTokens, OptionalInt bosTokenId, int[] eosTokenIds, byte[] plainJson) {
        this.tokenizer = tokenizer;
        this.plainJson = plainJson;
        List<String> bySize = new ArrayList<>(specialTokens.keySet());
        bySize.removeIf(String::isEmpty);
        bySize.sort(Comparator.comparingInt(String::length).reversed());
        this.specialByLength = List.copyOf(bySize);
        this.addSpecialTokens = addSpecialTokens;
        this.vocabSize = vocabSize;
        this.specialTokens = Collections.unmodifiableMap(specialTokens);
        this.specialTokenIds = Set.copyOf(specialTokens.values());
        this.bosTokenId = bosTokenId;
        this.eosTokenIds = eosTokenIds;
    }

    /** Loads {@code modelDir/tokenizer.json} and the config files beside it; encode adds no special tokens. */
    public static Tokenizer load(Path modelDir) throws IOException {
        return load(modelDir, false);
    }

    /**
     * Loads {@code modelDir/tokenizer.json}.
     *
     * @param addSpecialTokens whether {@link #encode(String)} applies the tokenizer's post-processor (e.g. a BOS
     *                         that Llama-style tokenizers prepend); the chat path wants {@code false}
     */
    public static Tokenizer load(Path modelDir, boolean addSpecialTokens) throws IOException {
        Path tokenizerJson = modelDir.resolve("tokenizer.json");
        if (!Files.isRegularFile(tokenizerJson)) {
            throw new IOException("no tokenizer.json in " + modelDir.toAbsolutePath());
        }
        JsonNode tokenizerTree = JSON.readTree(tokenizerJson.toFile());
        JsonNode tokenizerConfig = readOptional(modelDir.resolve("tokenizer_config.json"));
        JsonNode generationConfig = readOptional(modelDir.resolve("generation_config.json"));

        Map<String, Integer> special = new LinkedHashMap<>();
        Map<String, Integer> added = new HashMap<>();
        Set<Integer> ids = new HashSet<>();
        for (JsonNode token : tokenizerTree.path("added_tokens")) {
            String content = token.path("content").asString();
            int id = token.path("id").asInt();
            added.put(content, id);
            ids.add(id);
            if (token.path("special").asBoolean(false)) {
                special.put(content, id);
            }
        }
        JsonNode vocab = tokenizerTree.path("model").path("vocab");
        if (vocab.isObject()) {         // BPE, WordPiece, WordLevel: {"piece": id}
            for (JsonNode id : vocab.values()) {
                ids.add(id.asInt());
            }
        } else if (vocab.isArray()) {   // Unigram: [["piece", score], ...], id = position
            for (int i = 0; i < vocab.size(); i++) {
                ids.add(i);
            }
        }

        OptionalInt bos = firstId(generationConfig.path("bos_token_id"));
        if (bos.isEmpty()) {
            bos = tokenId(tokenizerConfig.path("bos_token"), added);
        }
        Set<Integer> eos = new LinkedHashSet<>();
        JsonNode genEos = generationConfig.path("eos_token_id");
        if (genEos.isArray()) {
            genEos.forEach(id -> eos.add(id.asInt()));
        } else if (genEos.isNumber()) {
            eos.add(genEos.asInt());
        }
        tokenId(tokenizerConfig.path("eos_token"), added).ifPresent(eos::add);

        ensureNativeLibraryLoadsOffline();
        Map<String, String> options = Map.of(
                "addSpecialTokens", Boolean.toString(addSpecialTokens),
                "truncation", "false",
                "padding", "false");
        HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(modelDir, options);
        if (!"DO_NOT_TRUNCATE".equals(hf.getTruncation()) || !"DO_NOT_PAD".equals(hf.getPadding())) {
            String state = hf.getTruncation() + "/" + hf.getPadding();
            hf.close();
            throw new IllegalStateException("DJL tokenizer kept truncation/padding on: " + state);
        }
        ArrayNode kept = JSON.createArrayNode();
        for (JsonNode token : tokenizerTree.path("added_tokens")) {
            if (!token.path("special").asBoolean(false)) {
                kept.add(token);
            }
        }
        ((ObjectNode) tokenizerTree).set("added_tokens", kept);
        return new Tokenizer(hf, addSpecialTokens, ids.size(), special, bos,
                eos.stream().mapToInt(Integer::intValue).toArray(), JSON.writeValueAsBytes(tokenizerTree));
    }

    /**
     * DJL's loader copies the JNI library out of the tokenizers jar (it bundles linux-x86_64, linux-aarch64,
     * osx-aarch64 and win-x86_64) into {@code ~/.djl.ai/tokenizers/} — unless it detects a CUDA GPU, in which case
     * it tries to download a CUDA build from the internet; and every tokenizer construction "calls home" (an EC2
     * metadata probe and, on EC2, a telemetry request). Offline mode makes it always use the bundled CPU library and
     * never touch the network. An explicit DJL_OFFLINE / OPT_OUT_TRACKING setting by the user still wins. (The GPU
     * detection itself needs JNA, which the build leaves out, so it finds no GPU without probing for one.)
     */
    static void ensureNativeLibraryLoadsOffline() {
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        if (System.getenv("OPT_OUT_TRACKING") == null && System.getProperty("OPT_OUT_TRACKING") == null) {
            System.setProperty("OPT_OUT_TRACKING", "true");
        }
    }

    /** Token ids of {@code text}; adds special tokens only if this tokenizer was loaded with that option. */
    public int[] encode(String text) {
        return encode(text, addSpecialTokens);
    }

    /** Token ids of {@code text}, applying the tokenizer's post-processor (special tokens) if asked. */
    public int[] encode(String text, boolean withSpecialTokens) {
        long[] ids = tokenizer.encode(text, withSpecialTokens, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    /**
     * Marks the special-token text inside {@code s} (text a client sent) so that {@link #encodeMarked} tokenizes it
     * as ordinary text: each occurrence of a special token's text becomes {@link #MARK} and one private-use
     * character naming the token, and a {@link #MARK} already in {@code s} is doubled. Marking is undone by
     * {@link #unmark}; a string without special-token text or {@link #MARK} is returned as it is.
     */
    public String markSpecialText(String s) {
        if (s.indexOf(MARK) < 0 && !containsSpecialText(s)) {
            return s;
        }
        StringBuilder out = new StringBuilder(s.length() + 8);
        int i = 0;
        outer:
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == MARK) {
                out.append(MARK).append(MARK);
                i++;
                continue;
            }
            for (int k = 0; k < specialByLength.size(); k++) {
                String t = specialByLength.get(k);
                if (s.startsWith(t, i)) {
                    out.append(MARK).append((char) (MARK + 1 + k));
                    i += t.length();
                    continue outer;
                }
            }
            out.append(c);
            i++;
        }
        return out.toString();
    }

    /** Whether {@code s} holds the text of a special token. */
    public boolean containsSpecialText(String s) {
        for (String t : specialByLength) {
            if (s.contains(t)) {
                return true;
            }
        }
        return false;
    }

    /** {@code s} with the marks of {@link #markSpecialText} replaced by the text they stand for. */
    public String unmark(String s) {
        int m = s.indexOf(MARK);
        if (m < 0) {
            return s;
        }
        StringBuilder out = new StringBuilder(s.length());
        out.append(s, 0, m);
        for (int i = m; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == MARK && i + 1 < s.length()) {
                char n = s.charAt(++i);
                int k = n - MARK - 1;
                out.append(n == MARK ? String.valueOf(MARK) : k >= 0 && k < specialByLength.size()
                        ? specialByLength.get(k) : String.valueOf(c) + n);
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /**
     * Token ids of a text in which the parts a client sent were marked by {@link #markSpecialText}: special-token
     * text outside the marks (the chat template's own markup) becomes the special tokens, the marked text is
     * tokenized as ordinary text, as Hugging Face tokenizers do with {@code split_special_tokens=True} (the
     * {@code tokenizers} library does not offer that per span, so the text is split at the template's special
     * tokens here and each piece is encoded by a second tokenizer without the special added tokens). A text
     * without marks is encoded exactly as {@link #encode(String)} does.
     */
    public int[] encodeMarked(String text) {
        if (text.indexOf(MARK) < 0) {
            return encode(text);
        }
        HuggingFaceTokenizer plainTokenizer = plainTokenizer();
        List<Long> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        outer:
        while (i < text.length()) {
            if (text.charAt(i) == MARK) {
                i += 2; // a mark and the character naming its token
                continue;
            }
            for (String t : specialByLength) {
                if (text.startsWith(t, i)) {
                    addAll(out, plainTokenizer, unmark(text.substring(start, i)));
                    out.add((long) specialTokens.get(t));
                    i += t.length();
                    start = i;
                    continue outer;
                }
            }
            i++;
        }
        addAll(out, plainTokenizer, unmark(text.substring(start)));
        int[] ids = new int[out.size()];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = Math.toIntExact(out.get(k));
        }
        return ids;
    }

    private static void addAll(List<Long> out, HuggingFaceTokenizer t, String text) {
        if (!text.isEmpty()) {
            for (long id : t.encode(text, false, false).getIds()) {
                out.add(id);
            }
        }
    }

    private HuggingFaceTokenizer plainTokenizer() {
        HuggingFaceTokenizer p = plain;
        if (p == null) {
            synchronized (this) {
                p = plain;
                if (p == null) {
                    try {
                        p = HuggingFaceTokenizer.newInstance(new ByteArrayInputStream(plainJson), Map.of(
                                "addSpecialTokens", "false", "truncation", "false", "padding", "false"));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                    plain = p;
                }
            }
        }
        return p;
    }

    /** Text of {@code ids}, special tokens included (as Hugging Face's {@code decode} by default). */
    public String decode(int[] ids) {
        return decode(ids, 0, ids.length, false);
    }

    /** Text of {@code ids}; {@code skipSpecialTokens} drops tokens such as {@code <|im_end|>}. */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        return decode(ids, 0, ids.length, skipSpecialTokens);
    }

    /** Text of {@code ids[from, to)}. */
    public String decode(int[] ids, int from, int to, boolean skipSpecialTokens) {
        Objects.checkFromToIndex(from, to, ids.length);
        long[] window = new long[to - from];
        for (int i = from; i < to; i++) {
            window[i - from] = ids[i];
        }
        return tokenizer.decode(window, skipSpecialTokens);
    }

    /** Number of distinct token ids: the model vocabulary plus added tokens ({@code len(tokenizer)} in Python). */
    public int vocabSize() {
        return vocabSize;
    }

    /** Id of the special token written {@code token}, e.g. {@code "<|im_end|>"}. */
    public OptionalInt specialTokenId(String token) {
        Integer id = specialTokens.get(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /** Special tokens by their text, in {@code tokenizer.json} order. */
    public Map<String, Integer> specialTokens() {
        return specialTokens;
    }

    /** Ids of all special tokens. */
    public Set<Integer> specialTokenIds() {
        return specialTokenIds;
    }

    /** BOS id: {@code generation_config.json bos_token_id}, else {@code tokenizer_config.json bos_token}. */
    public OptionalInt bosTokenId() {
        return bosTokenId;
    }

    /** Ids that end generation: {@code generation_config.json eos_token_id} (int or list) and the tokenizer's EOS. */
    public int[] eosTokenIds() {
        return eosTokenIds.clone();
    }

    public boolean isEos(int id) {
        for (int eos : eosTokenIds) {
            if (eos == id) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        tokenizer.close();
        HuggingFaceTokenizer p = plain;
        if (p != null) {
            p.close();
        }
    }

    @Override
    public String toString() {
        return "Tokenizer[vocabSize=" + vocabSize + ", special=" + specialTokens.keySet() + ", bos=" + bosTokenId
                + ", eos=" + Arrays.toString(eosTokenIds) + "]";
    }

    private static JsonNode readOptional(Path file) {
        if (!Files.isRegularFile(file)) {
            return JSON.missingNode();
        }
        try {
            return JSON.readTree(file.toFile());
        } catch (RuntimeException e) {
            throw new UncheckedIOException(new IOException("cannot parse " + file + ": " + e.getMessage(), e));
        }
    }

    private static OptionalInt firstId(JsonNode node) {
        if (node.isNumber()) {
            return OptionalInt.of(node.asInt());
        }
        if (node.isArray() && !node.isEmpty()) {
            return OptionalInt.of(node.get(0).asInt());
        }
        return OptionalInt.empty();
    }

    /** A {@code tokenizer_config.json} special token (a string or an AddedToken object) to its id. */
    private static OptionalInt tokenId(JsonNode token, Map<String, Integer> added) {
        String content = token.isObject() ? token.path("content").asString(null) : token.asString(null);
        Integer id = content == null ? null : added.get(content);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }
}
