package io.tqserve.config;

import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.kv.KvScheme;
import io.tqserve.routing.RoutingPolicy;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * Everything a deployment sets under {@code tqserve.}. Unknown keys under {@code tqserve.} fail startup (the
 * failure names the key); values are validated at bind time. docs/configuration.md lists every key.
 */
@ConfigurationProperties(prefix = "tqserve", ignoreUnknownFields = false)
@Validated
public record TqserveProperties(@Valid @DefaultValue Model model, @Valid @DefaultValue Backend backend,
        @Valid @DefaultValue Kv kv, @Valid @DefaultValue Lanes lanes, @Valid @DefaultValue Routing routing,
        @Valid @DefaultValue Api api, @Valid @DefaultValue PromptCache promptCache, @Valid @DefaultValue Store store,
        @Valid @DefaultValue StructuredOutput structuredOutput) {

    /**
     * @param path Hugging Face model folder (config.json, tokenizer.json, *.safetensors)
     * @param id   served model id; empty = the folder's name
     */
    public record Model(@DefaultValue("models/tiny-llama-h128") @NotBlank String path, @DefaultValue("") String id) {
    }

    /** Which compute backend. */
    public enum BackendType {
        AUTO, CPU, MLX
    }

    /**
     * @param type    auto | cpu | mlx
     * @param threads kernel worker threads; 0 = the physical cores
     * @param mlx     MLX backend settings
     * @param warmup  most time spent before readiness running the request code paths on throwaway caches, so the
     *                first requests are not served by a JIT-cold engine; 0 = no warm-up (at least one round otherwise)
     */
    public record Backend(@DefaultValue("auto") @NotNull BackendType type, @DefaultValue("0") @Min(0) int threads,
            @Valid @DefaultValue Mlx mlx, @DefaultValue("10s") @NotNull Duration warmup) {
    }

    /**
     * @param library      path of libmlxc; empty = MLXC_LIBRARY, /opt/homebrew/lib, /usr/local/lib
     * @param dtype        native (the checkpoint's dtype for weights and activations, loaded once) | float32
     * @param wiredLimit   bytes MLX keeps wired on Metal: recommended (the device's recommended working set) | 0
     *                     (none) | a size such as 24GB
     * @param cacheLimit   most bytes of freed buffers MLX keeps for reuse; empty = MLX's default (its memory limit)
     * @param prefillChunk prompt tokens one sequence prefills per batched-lane step on MLX (instead of
     *                     tqserve.lanes.batched.prefill-chunk)
     * @param turboKernel  auto (the device's kernel: metal on a Metal device, cuda on a CUDA device, ops on the CPU
     *                     device) | ops (MLX operations, every device) | metal | cuda (the fused decode-step kernel
     *                     over a device TurboQuant cache in that language; refused at startup where it cannot run)
     */
    public record Mlx(@DefaultValue("") String library, @DefaultValue("native") @NotNull MlxOptions.Dtype dtype,
            @DefaultValue("recommended") @NotNull String wiredLimit, @DefaultValue("") String cacheLimit,
            @DefaultValue("2048") @Min(1) int prefillChunk,
            @DefaultValue("auto") @NotNull MlxOptions.TurboKernel turboKernel) {

        /** The backend options; a limit that is not a size fails naming its key. */
        public MlxOptions options() {
            long wired = "recommended".equalsIgnoreCase(wiredLimit.trim()) ? MlxOptions.RECOMMENDED
                    : size(wiredLimit, "tqserve.backend.mlx.wired-limit", "recommended, 0 or a size such as 24GB");
            long cache = cacheLimit == null || cacheLimit.isBlank() ? MlxOptions.MLX_DEFAULT
                    : size(cacheLimit, "tqserve.backend.mlx.cache-limit", "empty or a size such as 2GB");
            return new MlxOptions(dtype, wired, cache, turboKernel);
        }

        private static long size(String value, String key, String expected) {
            try {
                long bytes = DataSize.parse(value.trim()).toBytes();
                if (bytes < 0) {
                    throw new IllegalArgumentException("negative");
                }
                return bytes;
            } catch (IllegalArgumentException e) {
                throw new StartupValidationException(key + "=" + value + " is not " + expected);
            }
        }
    }

    /** @param scheme the turbo lane's KV scheme: turbo:k&lt;bits&gt;v&lt;bits&gt; | int8 | int4 | bf16 */
    public record Kv(@DefaultValue("turbo:k8v3") @NotNull KvScheme scheme) {
    }

    public record Lanes(@Valid @DefaultValue Turbo turbo, @Valid @DefaultValue Batched batched,
            @Valid @DefaultValue Speculative speculative) {
    }

    /**
     * Prompt-lookup speculation on both lanes (CPU backend): drafts copied from the prompt and output where the last
     * tokens recur, verified in one forward pass; the output is the same as without it.
     *
     * @param enabled  propose and verify drafts (a request opts out with {@code "tqserve_speculative": false})
     * @param minNgram shortest run of last tokens looked up
     * @param maxNgram longest run of last tokens looked up (the longest match wins)
     * @param maxDraft most draft tokens verified in one pass
     */
    public record Speculative(@DefaultValue("true") boolean enabled, @DefaultValue("2") @Min(1) int minNgram,
            @DefaultValue("4") @Min(1) int maxNgram, @DefaultValue("8") @Min(1) @Max(16) int maxDraft) {
        public io.tqserve.engine.PromptLookup lookup() {
            return enabled ? new io.tqserve.engine.PromptLookup(minNgram, maxNgram, maxDraft)
                    : io.tqserve.engine.PromptLookup.OFF;
        }
    }

    /**
     * @param enabled       serve the serial turbo lane
     * @param queueCapacity requests that may wait for it
     * @param kvBudget      KV bytes it may hold (one sequence at a time, so this caps the context)
     */
    public record Turbo(@DefaultValue("true") boolean enabled, @DefaultValue("16") @Min(1) int queueCapacity,
            @DefaultValue("256MB") @NotNull DataSize kvBudget) {
    }

    /**
     * @param enabled         serve the batched bf16 lane
     * @param maxBatch        most sequences running at once
     * @param queueCapacity   requests that may wait for it
     * @param kvBudget        KV bytes its running sequences may hold together (worst case each)
     * @param prefillChunk    prompt tokens one sequence prefills per step
     * @param prefillsPerStep prompt rows one step may prefill, in prefill chunks (shortest remaining prompt first)
     */
    public record Batched(@DefaultValue("true") boolean enabled, @DefaultValue("8") @Min(1) @Max(256) int maxBatch,
            @DefaultValue("64") @Min(1) int queueCapacity, @DefaultValue("512MB") @NotNull DataSize kvBudget,
            @DefaultValue("64") @Min(1) int prefillChunk, @DefaultValue("1") @Min(1) int prefillsPerStep) {
    }

    /**
     * Prefix reuse: each lane keeps a byte-capped LRU of prompt KV prefixes in its own KV format.
     *
     * @param enabled   reuse cached prompt prefixes
     * @param maxBytes  memory cap per lane
     * @param minTokens shortest prefix worth caching or reusing
     */
    public record PromptCache(@DefaultValue("true") boolean enabled, @DefaultValue("128MB") @NotNull DataSize maxBytes,
            @DefaultValue("16") @Min(1) int minTokens) {
    }

    /**
     * KV persistence.
     *
     * @param dir       directory for prompt-cache spill files and KV snapshots; empty = persistence off
     * @param maxBytes  disk cap of the prompt-cache spill tier (per lane)
     * @param snapshots limits of the KV snapshot store
     */
    public record Store(@DefaultValue("") String dir, @DefaultValue("1GB") @NotNull DataSize maxBytes,
            @Valid @DefaultValue Snapshots snapshots) {
    }

    /**
     * Limits of the KV snapshots ({@code POST /v1/kv/snapshots}); 0 = no limit. Per key = per API key (all
     * requests together when no keys are set).
     *
     * @param maxCount       snapshots kept in all
     * @param maxBytes       disk bytes of all snapshots
     * @param maxCountPerKey snapshots one API key may keep
     * @param maxBytesPerKey disk bytes of one API key's snapshots
     */
    public record Snapshots(@DefaultValue("1000") @Min(0) int maxCount,
            @DefaultValue("10GB") @NotNull DataSize maxBytes, @DefaultValue("100") @Min(0) int maxCountPerKey,
            @DefaultValue("2GB") @NotNull DataSize maxBytesPerKey) {
    }

    /**
     * @param policy               auto | turbo | batched
     * @param longContextThreshold worst-case tokens (prompt + max_tokens) above which auto picks the turbo lane
     */
    public record Routing(@DefaultValue("auto") @NotNull RoutingPolicy policy,
            @DefaultValue("1024") @Min(1) int longContextThreshold) {
    }

    /**
     * @param keys                API keys; non-empty = Bearer auth on everything but the open actuator endpoints
     * @param strictModelId       reject requests whose "model" is not the served id (else any id is an alias)
     * @param defaultMaxTokens    chat max_tokens when the request gives none (capped by the context left)
     * @param keepAliveInterval   SSE comment interval while a stream has nothing else to send
     * @param retryAfter          Retry-After sent with 429 (queue full) and 503 (loading, shutting down)
     * @param requestTimeout      a generation request that has not ended this long after it arrived ends with a
     *                            timeout error (0 = no limit)
     * @param shutdownGracePeriod at shutdown, how long running requests may finish before they are ended
     * @param logPrompts          log prompt text with each request (off: only counts and ids are logged)
     * @param maxMessages         most chat messages in one request
     * @param maxPromptChars      most characters of prompt text (all messages together) in one request
     * @param openActuator        actuator endpoints that stay open when keys are set (the others need the key)
     * @param cors                cross-origin access for browsers
     * @param allowedHosts        host names the Host header may name (DNS-rebinding guard); empty = any
     * @param http                connection timeouts
     * @param queueFullStatus     HTTP status of a request refused because its lane's queue is full: 429 (what OpenAI
     *                            clients expect) or 503 (for proxies that retry only 503 on another replica, such
     *                            as HAProxy 2.6)
     * @param specialTokensInContent tokenize special-token text in messages, tool results, tool-call arguments and
     *                            tools as the special tokens (off: as ordinary text, so a message cannot forge a
     *                            turn; turn on only when every client is trusted)
     * @param responses           the responses kept for the Responses API's previous_response_id and GET
     */
    public record Api(@DefaultValue List<String> keys, @DefaultValue("false") boolean strictModelId,
            @DefaultValue("512") @Min(1) int defaultMaxTokens, @DefaultValue("5s") @NotNull Duration keepAliveInterval,
            @DefaultValue("1s") @NotNull Duration retryAfter, @DefaultValue("10m") @NotNull Duration requestTimeout,
            @DefaultValue("15s") @NotNull Duration shutdownGracePeriod, @DefaultValue("false") boolean logPrompts,
            @DefaultValue("1000") @Min(1) int maxMessages, @DefaultValue("1000000") @Min(1) int maxPromptChars,
            @DefaultValue("health") List<String> openActuator, @Valid @DefaultValue Cors cors,
            @DefaultValue List<String> allowedHosts, @Valid @DefaultValue Http http,
            @DefaultValue("429") int queueFullStatus, @DefaultValue("false") boolean specialTokensInContent,
            @Valid @DefaultValue Responses responses) {
        public Api {
            if (queueFullStatus != 429 && queueFullStatus != 503) {
                throw new IllegalArgumentException("tqserve.api.queue-full-status must be 429 or 503, not "
                        + queueFullStatus);
            }
            keys = keys == null ? List.of() : List.copyOf(keys);
            openActuator = openActuator == null ? List.of() : List.copyOf(openActuator);
            allowedHosts = allowedHosts == null ? List.of() : List.copyOf(allowedHosts);
        }
    }

    /**
     * The responses of {@code POST /v1/responses} kept in memory (with {@code store}, the default) for
     * {@code previous_response_id} and {@code GET /v1/responses/{id}}, per API key.
     *
     * @param maxCountPerKey responses one API key keeps (the oldest go first); 0 = none are kept
     * @param maxBytesPerKey memory one API key's responses take (their JSON text)
     * @param ttl            how long a response is kept
     */
    public record Responses(@DefaultValue("1000") @Min(0) int maxCountPerKey,
            @DefaultValue("64MB") @NotNull DataSize maxBytesPerKey, @DefaultValue("1h") @NotNull Duration ttl) {
    }

    /**
     * Constraint compiles of structured outputs ({@code response_format}) and tool calls.
     *
     * @param compileThreads threads that compile constraints; 0 = half the processors (at least 1)
     * @param compileQueue   compiles that may wait for a thread; a request finding the queue full is refused with
     *                       tqserve.api.queue-full-status (code queue_full)
     * @param cacheBytes        memory cap of the compiled constraints kept for reuse (entries are per API key)
     * @param compileTimeout    a compile still running this long is refused with a 400 (code schema_too_complex)
     * @param maxNodes          grammar nodes one schema may compile to
     * @param maxLexemeStates   automaton states of one regular piece (a format, an integer range)
     * @param maxEnumBytes      bytes of the values of one enum
     * @param maxConfigurations parser configurations alive at once (ambiguous anyOf branches, optional members
     *                          sharing a prefix)
     * @param maxClosingBytes   length of the shortest document valid against the schema
     * @param maxWhitespace     bytes of one run of JSON whitespace in the output
     * @param maskCacheBytes    memory of one constraint's cache of lexeme masks
     * @param maskWork          work units one token mask may take (a unit: a vocabulary-trie node visited, a
     *                          parser step, a closing bound); beyond it the request fails with schema_too_complex
     * @param requestWork       work units all token masks of one request may take together
     * @param maskTimeout       CPU time one token mask may take (a backstop to maskWork)
     * @param lowPriority       whether the compile threads run at the lowest OS scheduling priority (Linux nice 19,
     *                          macOS background band), taking only CPU the lanes leave
     * @param compileMemory     bytes one compile may allocate (its thread's allocations, all tools of a request
     *                          together); beyond it the request is refused with a 400 (code schema_too_complex)
     * @param warmup            most time spent before readiness compiling representative schemas and sampling
     *                          through them (after tqserve.backend.warmup), so the JIT compiles the schema compiler
     *                          and the mask code before traffic; 0 = none
     */
    public record StructuredOutput(@DefaultValue("0") @Min(0) int compileThreads,
            @DefaultValue("64") @Min(1) int compileQueue, @DefaultValue("64MB") @NotNull DataSize cacheBytes,
            @DefaultValue("2s") @NotNull Duration compileTimeout, @DefaultValue("100000") @Min(1) int maxNodes,
            @DefaultValue("5000") @Min(1) int maxLexemeStates, @DefaultValue("4MB") @NotNull DataSize maxEnumBytes,
            @DefaultValue("512") @Min(1) int maxConfigurations,
            @DefaultValue("1MB") @NotNull DataSize maxClosingBytes, @DefaultValue("32") @Min(0) int maxWhitespace,
            @DefaultValue("16MB") @NotNull DataSize maskCacheBytes,
            @DefaultValue("10000000") @Min(1) long maskWork, @DefaultValue("200000000") @Min(1) long requestWork,
            @DefaultValue("1s") @NotNull Duration maskTimeout, @DefaultValue("true") boolean lowPriority,
            @DefaultValue("2GB") @NotNull DataSize compileMemory, @DefaultValue("10s") @NotNull Duration warmup) {
        public StructuredOutput {
            if (maskTimeout != null && (maskTimeout.isNegative() || maskTimeout.toMillis() < 1)) {
                throw new IllegalArgumentException("tqserve.structured-output.mask-timeout must be at least 1ms, not "
                        + maskTimeout);
            }
            if (compileMemory != null && compileMemory.toBytes() < 1) {
                throw new IllegalArgumentException("tqserve.structured-output.compile-memory must be positive, not "
                        + compileMemory);
            }
            if (compileTimeout != null && (compileTimeout.isNegative() || compileTimeout.isZero())) {
                throw new IllegalArgumentException("tqserve.structured-output.compile-timeout must be positive, not "
                        + compileTimeout);
            }
        }
    }

    /**
     * Read timeouts of HTTP connections; none of them applies while a response (an SSE stream) is being sent.
     *
     * @param headerTimeout from the first byte of a request to the end of its headers; then 408 and close
     * @param bodyTimeout   from the end of a request's headers to the end of its body; then the connection closes
     * @param idleTimeout   a keep-alive connection waiting for its next request is closed after this long
     */
    public record Http(@DefaultValue("20s") @NotNull Duration headerTimeout,
            @DefaultValue("60s") @NotNull Duration bodyTimeout, @DefaultValue("60s") @NotNull Duration idleTimeout) {
    }

    /** @param allowedOrigins origins (e.g. https://app.example.com, or *) browsers may call the API from; empty = CORS off */
    public record Cors(@DefaultValue List<String> allowedOrigins) {
        public Cors {
            allowedOrigins = allowedOrigins == null ? List.of() : List.copyOf(allowedOrigins);
        }
    }
}
