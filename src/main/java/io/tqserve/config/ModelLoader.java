package io.tqserve.config;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.Lane;
import io.tqserve.engine.LaneObserver;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.engine.Warmup;
import io.tqserve.model.Model;
import io.tqserve.routing.LanePlan;
import io.tqserve.routing.RequestObserver;
import io.tqserve.routing.RoutingService;
import io.tqserve.routing.ServingRuntime;
import java.util.ArrayList;
import java.util.List;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.store.PromptCache;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Loads the model and starts the lanes on a background thread once the context is up, so the HTTP port and the
 * health endpoints answer (readiness DOWN, the API 503) while weights load; then marks the runtime ready. On
 * shutdown closes the lanes (running streams end with an error event), the model and the backend.
 */
public final class ModelLoader implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(ModelLoader.class);

    private final TqserveProperties props;
    private final StartupValidator.Plan plan;
    private final ServingRuntime runtime;
    private final LaneObserver laneObserver;
    private final RequestObserver requestObserver;
    private final io.tqserve.api.StructuredOutputWarmup structuredWarmup;
    private final List<Lane> lanes = new ArrayList<>();
    private Thread thread;
    private ComputeBackend backend;
    private Model model;
    private volatile boolean running;

    /** @param structuredWarmup the structured-output warm-up run before readiness, or null for none */
    public ModelLoader(TqserveProperties props, StartupValidator.Plan plan, ServingRuntime runtime,
            LaneObserver laneObserver, RequestObserver requestObserver,
            io.tqserve.api.StructuredOutputWarmup structuredWarmup) {
        this.structuredWarmup = structuredWarmup;
        this.props = props;
        this.plan = plan;
        this.runtime = runtime;
        this.laneObserver = laneObserver;
        this.requestObserver = requestObserver;
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        thread = Thread.ofPlatform().name("tqserve-model-loader").daemon(true).start(this::load);
    }

    private void load() {
        long t0 = System.nanoTime();
        try {
            BackendSelector.Selection selection = BackendSelector.select(props.backend().type().name(),
                    props.backend().threads(), props.backend().mlx().library(), props.backend().mlx().options());
            log.info("tqserve: {}", selection.reason());
            ComputeBackend b = selection.backend();
            Model m;
            try {
                m = Model.load(plan.modelDir(), b);
            } catch (Exception | Error e) {
                b.close();
                throw e;
            }
            synchronized (this) {
                backend = b;
                model = m;
                if (!running) {
                    closeAll();
                    return;
                }
            }
            List<KvScheme> schemes = plan.plans().stream().map(LanePlan::scheme).distinct().toList();
            try {
                // the constraint vocabulary (token bytes as a trie) before readiness: never inside a request's
                // compile budget, nor in front of unrelated requests
                long v0 = System.nanoTime();
                int tokens = io.tqserve.api.ConstraintVocabularies.of(m).size();
                log.info("tqserve: constraint vocabulary of {} tokens built in {} ms", tokens,
                        (System.nanoTime() - v0) / 1_000_000);
            } catch (RuntimeException e) {
                log.warn("tqserve: the constraint vocabulary could not be built, structured outputs will retry: {}",
                        e.toString());
            }
            try {
                Warmup.Report w = Warmup.run(m, schemes, props.backend().warmup(), () -> running);
                if (w.rounds() > 0) {
                    log.info("tqserve: warmed up {} in {} ms ({} rounds, {} forward passes on throwaway caches)",
                            schemes.stream().map(KvScheme::id).toList(), w.millis(), w.rounds(), w.forwards());
                }
            } catch (RuntimeException e) {
                if (!running) {
                    throw e; // shutdown closed the model under the warm-up
                }
                // The lanes contain a failing request on their own; a warm-up that fails must not keep the server
                // from serving what works. Say so loudly: requests on that path will likely fail the same way.
                log.warn("tqserve: the startup warm-up failed, serving without it: {}", e.toString(), e);
            }
            warmStructuredOutputs(m);
            List<Lane> started = new ArrayList<>();
            synchronized (this) {
                if (!running) {
                    closeAll();
                    return;
                }
                for (LanePlan lp : plan.plans()) {
                    Lane lane = switch (lp.kind()) {
                        case TURBO -> {
                            SerialTurboLane l = new SerialTurboLane(m, lp.scheme(), lp.budgetBytes(),
                                    props.lanes().turbo().queueCapacity());
                            l.setObserver(laneObserver);
                            l.setPromptCache(promptCache(m, lp.scheme()));
                            l.setPromptLookup(props.lanes().speculative().lookup());
                            l.start();
                            yield l;
                        }
                        case BATCHED -> {
                            TqserveProperties.Batched c = props.lanes().batched();
                            BatchedBf16Lane l = new BatchedBf16Lane(m, lp.budgetBytes(), c.queueCapacity(),
                                    c.maxBatch(), "mlx".equals(b.name()) ? props.backend().mlx().prefillChunk()
                                            : c.prefillChunk(), c.prefillsPerStep());
                            l.setObserver(laneObserver);
                            l.setPromptCache(promptCache(m, lp.scheme()));
                            l.setPromptLookup(props.lanes().speculative().lookup());
                            l.start();
                            yield l;
                        }
                    };
                    lanes.add(lane);
                    started.add(lane);
                }
            }
            RoutingService routing = new RoutingService(props.routing().policy(),
                    props.routing().longContextThreshold(), started, requestObserver);
            log.info("tqserve: model {} loaded from {} in {} ms ({}); weights: {} MB, {}; lanes: {}", plan.modelId(),
                    plan.modelDir().toAbsolutePath(), (System.nanoTime() - t0) / 1_000_000, b.describe(),
                    m.weightBytes() >> 20, m.quantization().quantized() ? m.quantization().describe()
                            : m.config().dtype(), describeLanes());
            runtime.ready(m, routing);
        } catch (Throwable t) {
            synchronized (this) {
                if (!running) { // shutdown began while loading or warming up: stop() closed what was open
                    log.info("tqserve: startup ended by shutdown ({})", t.toString());
                    closeAll();
                    return;
                }
                log.error("tqserve: loading the model from {} failed: {}", plan.modelDir().toAbsolutePath(), t.toString(),
                        t);
                closeAll();
            }
            runtime.failed(t);
        }
    }

    /**
     * The structured-output warm-up (tqserve.structured-output.warmup): the schema compiler and the masks JIT-compiled
     * before readiness. A failing request of it is logged and the server serves all the same.
     */
    private void warmStructuredOutputs(Model m) {
        if (structuredWarmup == null) {
            return;
        }
        try {
            io.tqserve.api.StructuredOutputWarmup.Report w = structuredWarmup.run(m,
                    props.structuredOutput().warmup(), () -> running);
            if (w.rounds() > 0 || w.compiles() > 0) {
                log.info("tqserve: warmed up structured outputs in {} ms ({} rounds, {} compiles, {} masks)",
                        w.millis(), w.rounds(), w.compiles(), w.masks());
            }
            if (w.failures() > 0) {
                log.warn("tqserve: {} requests of the structured-output warm-up failed, serving all the same: {}",
                        w.failures(), w.firstFailure().toString(), w.firstFailure());
            }
        } catch (RuntimeException | StackOverflowError e) {
            if (!running) {
                throw e;
            }
            log.warn("tqserve: the structured-output warm-up failed, serving without it: {}", e.toString(), e);
        }
    }

    /** The lane's prompt cache per tqserve.prompt-cache and tqserve.store, or null when prefix reuse is off. */
    private PromptCache promptCache(Model m, KvScheme scheme) {
        TqserveProperties.PromptCache pc = props.promptCache();
        if (!pc.enabled()) {
            return null;
        }
        String dir = props.store().dir();
        return new PromptCache(scheme, m.transformer().attentionShape(), pc.maxBytes().toBytes(), pc.minTokens(),
                m.fingerprint(), m.tokenizerHash(), dir.isBlank() ? null : Path.of(dir).resolve("prompt-cache"),
                props.store().maxBytes().toBytes());
    }

    private String describeLanes() {
        StringBuilder sb = new StringBuilder();
        for (LanePlan lp : plan.plans()) {
            if (!sb.isEmpty()) {
                sb.append(", ");
            }
            sb.append(lp.kind().wireName()).append(' ').append(lp.scheme().id()).append(" (")
                    .append(lp.layout().bytesPerToken()).append(" KV bytes/token, budget ")
                    .append(lp.budgetBytes() / lp.layout().bytesPerToken()).append(" tokens)");
        }
        return sb.toString();
    }

    @Override
    public void stop() {
        synchronized (this) {
            running = false;
            closeAll();
        }
    }

    private void closeAll() {
        for (Lane l : lanes) {
            l.close();
        }
        lanes.clear();
        if (model != null) {
            model.close();
            model = null;
        }
        if (backend != null) {
            backend.close();
            backend = null;
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /**
     * Not stopped when the context is paused (Spring's test context cache pauses inactive contexts and restarts
     * them): stopping closes the model and the lanes, which a restart could not put back into the runtime.
     */
    @Override
    public boolean isPauseable() {
        return false;
    }

    /**
     * Between Spring Boot's graceful-shutdown phase (DEFAULT_PHASE - 1024, stops first) and the web server's
     * (DEFAULT_PHASE - 2048, stops last): at shutdown the lanes close while the server can still deliver the
     * error events of the streams they end; at startup loading begins once the port is open.
     */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 1536;
    }
}
