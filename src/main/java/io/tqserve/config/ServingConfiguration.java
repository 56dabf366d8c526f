package io.tqserve.config;

import io.tqserve.api.ApiSettings;
import io.tqserve.engine.Lane;
import io.tqserve.engine.LaneObserver;
import io.tqserve.routing.RequestObserver;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.ServingRuntime;
import java.util.List;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.ConfigurationPropertiesBinding;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The composition root of serving: validates the configuration against the model's config.json (failing startup
 * with a message that names the setting), publishes the {@link ServingRuntime}, and loads the model and lanes in
 * the background ({@link ModelLoader}).
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(TqserveProperties.class)
public class ServingConfiguration {

    @Bean
    @ConfigurationPropertiesBinding
    static KvSchemeConverter kvSchemeConverter() {
        return new KvSchemeConverter();
    }

    @Bean
    ApiSettings apiSettings(TqserveProperties props) {
        TqserveProperties.Api a = props.api();
        return new ApiSettings(a.keys(), a.strictModelId(), a.defaultMaxTokens(), a.keepAliveInterval(),
                a.retryAfter(), a.requestTimeout(), a.shutdownGracePeriod(), a.logPrompts(), a.maxMessages(),
                a.maxPromptChars(), a.openActuator(), a.cors().allowedOrigins(), a.queueFullStatus(),
                a.specialTokensInContent());
    }

    @Bean
    io.tqserve.api.responses.ResponseStore responseStore(TqserveProperties props) {
        TqserveProperties.Responses r = props.api().responses();
        return new io.tqserve.api.responses.ResponseStore(new io.tqserve.api.responses.ResponseStore.Limits(
                r.maxCountPerKey(), r.maxBytesPerKey().toBytes(), r.ttl()));
    }

    @Bean
    io.tqserve.api.HttpSettings httpSettings(TqserveProperties props) {
        TqserveProperties.Api a = props.api();
        return new io.tqserve.api.HttpSettings(a.allowedHosts(), a.http().headerTimeout(), a.http().bodyTimeout(),
                a.http().idleTimeout());
    }

    @Bean
    io.tqserve.api.StructuredOutputSettings structuredOutputSettings(TqserveProperties props) {
        TqserveProperties.StructuredOutput s = props.structuredOutput();
        return new io.tqserve.api.StructuredOutputSettings(s.compileThreads() == 0
                ? io.tqserve.api.StructuredOutputSettings.defaultThreads() : s.compileThreads(), s.compileQueue(),
                s.cacheBytes().toBytes(), s.compileTimeout(), new io.tqserve.constraint.ConstraintLimits(s.maxNodes(),
                        s.maxLexemeStates(), s.maxEnumBytes().toBytes(), s.maxConfigurations(),
                        s.maxClosingBytes().toBytes(), s.maxWhitespace(), s.maskCacheBytes().toBytes(), s.maskWork(),
                        Math.max(1, s.compileTimeout().toMillis()), s.requestWork(), s.maskTimeout().toMillis(),
                        s.compileMemory().toBytes(), io.tqserve.constraint.AllocationMeter.NONE),
                s.lowPriority());
    }

    @Bean
    io.tqserve.api.SnapshotSettings snapshotSettings(TqserveProperties props) {
        String dir = props.store().dir();
        TqserveProperties.Snapshots q = props.store().snapshots();
        return new io.tqserve.api.SnapshotSettings(dir.isBlank() ? null : java.nio.file.Path.of(dir).resolve("snapshots"),
                new io.tqserve.kv.store.SnapshotStore.Quota(q.maxCount(), q.maxBytes().toBytes(), q.maxCountPerKey(),
                        q.maxBytesPerKey().toBytes()));
    }

    @Bean
    StartupValidator.Plan servingPlan(TqserveProperties props) {
        StartupValidator.Plan plan = StartupValidator.validate(props);
        memoryWarning(props, plan).ifPresent(LoggerFactory.getLogger(KvMemoryCheck.class)::warn);
        return plan;
    }

    /**
     * The KV budgets and weights against this machine's memory ({@link KvMemoryCheck}): a warning at startup, a
     * problem for {@code config check} and {@code doctor}.
     */
    static java.util.Optional<String> memoryWarning(TqserveProperties props, StartupValidator.Plan plan) {
        return KvMemoryCheck.checkThisMachine(plan.plans(), props.lanes().batched().maxBatch(),
                weights(plan).bytes());
    }

    /** The weights' bytes and format, read from the model folder before loading (info, metrics, memory check). */
    @Bean
    io.tqserve.model.WeightsInfo weightsInfo(StartupValidator.Plan plan) {
        return weights(plan);
    }

    private static io.tqserve.model.WeightsInfo weights(StartupValidator.Plan plan) {
        try {
            return io.tqserve.model.WeightsInfo.read(plan.modelDir());
        } catch (java.io.IOException | RuntimeException e) {
            throw new StartupValidationException("cannot read the weights of " + plan.modelDir().toAbsolutePath() + ": "
                    + e.getMessage() + "; set tqserve.model.path to a supported model folder", e);
        }
    }

    @Bean
    ServingRuntime servingRuntime(StartupValidator.Plan plan) {
        return new ServingRuntime(plan.modelId(), plan.modelConfig(), plan.backend(), plan.plans());
    }

    @Bean
    ModelLoader modelLoader(TqserveProperties props, StartupValidator.Plan plan, ServingRuntime runtime,
            ObjectProvider<LaneObserver> laneObservers, ObjectProvider<RequestObserver> requestObservers,
            ObjectProvider<io.tqserve.api.StructuredOutputWarmup> structuredWarmup) {
        List<LaneObserver> lo = laneObservers.orderedStream().toList();
        List<RequestObserver> ro = requestObservers.orderedStream().toList();
        LaneObserver laneObserver = (lane, reason, prompt, completion) -> {
            for (LaneObserver o : lo) {
                o.sequenceEnded(lane, reason, prompt, completion);
            }
        };
        return new ModelLoader(props, plan, runtime, laneObserver, new FanOut(ro), structuredWarmup.getIfAvailable());
    }

    /** Tells every registered request observer. */
    private record FanOut(List<RequestObserver> all) implements RequestObserver {
        @Override
        public void routed(RouteDecision decision) {
            all.forEach(o -> o.routed(decision));
        }

        @Override
        public void endpoint(Lane.Kind lane, String endpoint) {
            all.forEach(o -> o.endpoint(lane, endpoint));
        }

        @Override
        public void started(Lane.Kind lane, long queueNanos) {
            all.forEach(o -> o.started(lane, queueNanos));
        }

        @Override
        public void firstToken(Lane.Kind lane, long ttftNanos) {
            all.forEach(o -> o.firstToken(lane, ttftNanos));
        }

        @Override
        public void interToken(Lane.Kind lane, long nanos) {
            all.forEach(o -> o.interToken(lane, nanos));
        }

        @Override
        public void completed(Lane.Kind lane, long e2eNanos) {
            all.forEach(o -> o.completed(lane, e2eNanos));
        }
    }
}
