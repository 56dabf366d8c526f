package io.tqserve.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.Lane;
import io.tqserve.model.SafetensorsWriter;
import io.tqserve.routing.LanePlan;
import io.tqserve.routing.ServingRuntime;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Startup fails, naming the setting to change, on configurations that cannot be served. */
class StartupValidationTest {
    static final String HEAD_DIM_96_MESSAGE = "head_dim 96 is not supported by the turbo KV scheme (needs 64, 128, "
            + "256 or 512); set tqserve.kv.scheme to bf16, set tqserve.lanes.turbo.enabled=false or serve another model";

    @TempDir
    static Path tmp;
    static Path headDim96;

    @BeforeAll
    static void writeHeadDim96Model() throws Exception {
        headDim96 = tmp.resolve("llama-h96");
        // A random-weight Llama with head_dim 96: hidden 192, 2 heads, 1 KV head, 1 layer, the embedded tokenizer.
        SafetensorsWriter.writeLlama(headDim96, 192, 64, 1, 2, 1, 96, 8192, 256, Path.of("models/tiny-llama-h128"),
                96);
    }

    final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withUserConfiguration(ServingConfiguration.class);

    static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    static String messages(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            sb.append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }

    @Test
    void rejectsHeadDim96ForTurboScheme() {
        runner.withPropertyValues("tqserve.model.path=" + headDim96).run(ctx -> {
            assertThat(ctx).hasFailed();
            Throwable root = rootCause(ctx.getStartupFailure());
            assertThat(root).isInstanceOf(StartupValidationException.class).hasMessage(HEAD_DIM_96_MESSAGE);
        });
    }

    @Test
    void servesHeadDim96ModelWithTheTurboLaneOff() {
        runner.withPropertyValues("tqserve.model.path=" + headDim96, "tqserve.lanes.turbo.enabled=false")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
                    assertThat(runtime.plans()).extracting(LanePlan::kind).containsExactly(Lane.Kind.BATCHED);
                    runtime.whenLoaded().get(60, TimeUnit.SECONDS);
                    assertThat(runtime.status()).isEqualTo(ServingRuntime.Status.READY);
                    assertThat(runtime.lane(Lane.Kind.BATCHED)).isPresent();
                    assertThat(runtime.modelConfig().headDim()).isEqualTo(96);
                });
    }

    @Test
    void failsOnAnUnknownKeyUnderTqserveNamingIt() {
        runner.withPropertyValues("tqserve.lanes.turbo.queue-capcity=3").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(messages(ctx.getStartupFailure())).contains("tqserve.lanes.turbo.queue-capcity");
        });
    }

    @Test
    void failsOnInvalidBitWidthsNamingTheKey() {
        runner.withPropertyValues("tqserve.kv.scheme=turbo:k3v3").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(messages(ctx.getStartupFailure())).contains("tqserve.kv.scheme")
                    .contains("invalid KV scheme 'turbo:k3v3'");
        });
    }

    @Test
    void failsOnOutOfRangeValuesNamingTheKey() {
        runner.withPropertyValues("tqserve.lanes.batched.max-batch=0").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(messages(ctx.getStartupFailure())).contains("lanes.batched.maxBatch");
        });
    }

    @Test
    void queueFullStatusIs429Or503() {
        runner.withPropertyValues("tqserve.api.queue-full-status=500").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(messages(ctx.getStartupFailure())).contains("tqserve.api.queue-full-status must be 429 or 503, "
                    + "not 500");
        });
    }

    @Test
    void failsWhenBothLanesAreDisabled() {
        runner.withPropertyValues("tqserve.lanes.turbo.enabled=false", "tqserve.lanes.batched.enabled=false")
                .run(ctx -> {
                    assertThat(ctx).hasFailed();
                    assertThat(rootCause(ctx.getStartupFailure())).hasMessageContaining("both lanes are disabled");
                });
    }

    @Test
    void failsOnAMissingModelFolderNamingTheKey() {
        runner.withPropertyValues("tqserve.model.path=" + tmp.resolve("nope")).run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(rootCause(ctx.getStartupFailure())).hasMessageContaining("set tqserve.model.path");
        });
    }
}
