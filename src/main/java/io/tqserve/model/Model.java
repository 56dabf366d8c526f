package io.tqserve.model;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.template.ChatTemplate;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * A loaded Hugging Face model folder: config, memory-mapped weights, tokenizer, chat template and the forward
 * pass on a backend. Close it to unmap the weights and free the tokenizer.
 */
public final class Model implements AutoCloseable {
    private final Path dir;
    private final ModelConfig config;
    private final GenerationConfig generation;
    private final Safetensors safetensors;
    private final Transformer transformer;
    private final Tokenizer tokenizer;
    private final ChatTemplate chatTemplate;
    private final String fingerprint;
    private final String tokenizerHash;
    private final QuantizationConfig quantization;

    private Model(Path dir, ModelConfig config, GenerationConfig generation, Safetensors safetensors,
            Transformer transformer, Tokenizer tokenizer, ChatTemplate chatTemplate, String fingerprint,
            String tokenizerHash, QuantizationConfig quantization) {
        this.dir = dir;
        this.config = config;
        this.generation = generation;
        this.safetensors = safetensors;
        this.transformer = transformer;
        this.tokenizer = tokenizer;
        this.chatTemplate = chatTemplate;
        this.fingerprint = fingerprint;
        this.tokenizerHash = tokenizerHash;
        this.quantization = quantization;
    }

    /** Loads a model folder onto a backend. Errors name the file and what is wrong with it. */
    public static Model load(Path dir, ComputeBackend backend) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("model folder " + dir.toAbsolutePath() + " does not exist");
        }
        ModelConfig config = ModelConfig.load(dir);
        QuantizationConfig quantization = QuantizationConfig.load(dir);
        GenerationConfig generation = GenerationConfig.load(dir, config.eosTokenIds());
        Safetensors st = Safetensors.open(dir);
        Tokenizer tokenizer = null;
        Transformer transformer = null;
        try {
            List<Path> weightFiles = st.headers().keySet().stream().map(dir::resolve).toList();
            transformer = new Transformer(config, ModelWeights.load(st, config, quantization), backend, weightFiles);
            tokenizer = Tokenizer.load(dir);
            ChatTemplate template = ChatTemplate.load(dir).orElse(null);
            return new Model(dir, config, generation, st, transformer, tokenizer, template, fingerprint(dir, st),
                    sha256(Files.readAllBytes(dir.resolve("tokenizer.json"))), quantization);
        } catch (IOException | RuntimeException e) {
            if (tokenizer != null) {
                tokenizer.close();
            }
            if (transformer != null) {
                transformer.close();
            }
            st.close();
            throw e;
        }
    }

    /** SHA-256 over config.json and every weight file's safetensors header: identifies the weights exactly. */
    private static String fingerprint(Path dir, Safetensors st) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(Files.readAllBytes(dir.resolve("config.json")));
            for (Map.Entry<String, String> e : st.headers().entrySet()) {
                md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
                md.update(e.getValue().getBytes(StandardCharsets.UTF_8));
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Hex SHA-256 of tokenizer.json. */
    public String tokenizerHash() {
        return tokenizerHash;
    }

    public Path dir() {
        return dir;
    }

    public ModelConfig config() {
        return config;
    }

    public GenerationConfig generation() {
        return generation;
    }

    public Transformer transformer() {
        return transformer;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    /** The chat template, or null when tokenizer_config.json has none. */
    public ChatTemplate chatTemplate() {
        return chatTemplate;
    }

    /** Hex SHA-256 identifying config and weights. */
    public String fingerprint() {
        return fingerprint;
    }

    /** The weights' quantization (NONE when dense). */
    public QuantizationConfig quantization() {
        return quantization;
    }

    /** Bytes of mapped weights (packed codes, scales and biases of quantized modules included). */
    public long weightBytes() {
        return safetensors.byteSize();
    }

    @Override
    public void close() {
        transformer.close();
        tokenizer.close();
        safetensors.close();
    }
}
