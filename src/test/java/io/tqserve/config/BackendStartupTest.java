package io.tqserve.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel;
import io.tqserve.routing.ServingRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** tqserve.backend.type, tqserve.backend.mlx.library and tqserve.backend.mlx.turbo-kernel at startup. */
class BackendStartupTest {
    final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withUserConfiguration(ServingConfiguration.class);

    @Test
    void mlxWithoutALibraryFailsStartupNamingEveryPlaceLookedAt(@TempDir Path tmp) {
        Assumptions.assumeTrue(System.getenv(BackendSelector.ENV) == null
                && BackendSelector.DEFAULT_DIRS.stream().noneMatch(d -> Files.exists(d.resolve(
                        BackendSelector.libraryFileName()))), "an MLX-C library is installed on this machine");
        Path missing = tmp.resolve("nowhere").resolve(BackendSelector.libraryFileName());
        runner.withPropertyValues("tqserve.backend.type=mlx", "tqserve.backend.mlx.library=" + missing).run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(StartupValidationTest.messages(ctx.getStartupFailure()))
                    .contains("tqserve.backend.type=mlx but no MLX-C library")
                    .contains(missing + " (absent)")
                    .contains("MLXC_LIBRARY (unset)")
                    .contains("/opt/homebrew/lib/" + BackendSelector.libraryFileName() + " (absent)")
                    .contains("/usr/local/lib/" + BackendSelector.libraryFileName() + " (absent)");
        });
    }

    @Test
    @Tag("mlx")
    void aBatchedKvBudgetThatDoesNotFitNextToTheWeightsFailsStartupNamingTheSetting() {
        Path lib = MlxTestLibrary.open().libraryFile();
        runner.withPropertyValues("tqserve.backend.type=mlx", "tqserve.backend.mlx.library=" + lib,
                "tqserve.lanes.batched.kv-budget=4096TB").run(ctx -> {
                    assertThat(ctx).hasFailed();
                    assertThat(StartupValidationTest.rootCause(ctx.getStartupFailure()))
                            .isInstanceOf(StartupValidationException.class)
                            .hasMessageContaining("need")
                            .hasMessageContaining("of MLX device memory")
                            .hasMessageContaining("tqserve.lanes.batched.kv-budget or tqserve.lanes.batched.max-batch");
                });
    }

    @Test
    void anMlxLimitThatIsNotASizeFailsStartupNamingTheKey() {
        runner.withPropertyValues("tqserve.backend.mlx.wired-limit=lots").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(StartupValidationTest.rootCause(ctx.getStartupFailure()))
                    .isInstanceOf(StartupValidationException.class)
                    .hasMessage("tqserve.backend.mlx.wired-limit=lots is not recommended, 0 or a size such as 24GB");
        });
    }

    @Test
    void theMetalTurboKernelOnTheCpuBackendFailsStartupNamingTheKey() {
        runner.withPropertyValues("tqserve.backend.type=cpu", "tqserve.backend.mlx.turbo-kernel=metal").run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(StartupValidationTest.rootCause(ctx.getStartupFailure()))
                    .isInstanceOf(StartupValidationException.class)
                    .hasMessage("tqserve.backend.mlx.turbo-kernel=metal needs the mlx backend on a Metal device, but "
                            + "the backend is cpu (tqserve.backend.type=cpu); use tqserve.backend.mlx.turbo-kernel=auto or ops");
        });
    }

    @Test
    @Tag("mlx")
    void theMetalTurboKernelWithoutMetalFailsStartupNamingTheKey() {
        var mlx = MlxTestLibrary.open();
        Assumptions.assumeFalse(MlxCustomKernel.metalAvailable(mlx), "Metal is present: the setting is honoured");
        runner.withPropertyValues("tqserve.backend.type=mlx", "tqserve.backend.mlx.library=" + mlx.libraryFile(),
                "tqserve.backend.mlx.turbo-kernel=metal").run(ctx -> {
                    assertThat(ctx).hasFailed();
                    assertThat(StartupValidationTest.rootCause(ctx.getStartupFailure()))
                            .isInstanceOf(StartupValidationException.class)
                            .hasMessageStartingWith("tqserve.backend.mlx.turbo-kernel=metal needs MLX on a Metal device, and "
                                    + mlx.libraryFile() + " runs on Device(cpu")
                            .hasMessageEndingWith("without Metal; use tqserve.backend.mlx.turbo-kernel=auto or ops");
                });
    }

    @Test
    @Tag("mlx")
    void mlxWithALibraryServesFromTheMlxDevice() {
        Path lib = MlxTestLibrary.open().libraryFile();
        runner.withPropertyValues("tqserve.backend.type=mlx", "tqserve.backend.mlx.library=" + lib,
                "tqserve.lanes.turbo.enabled=false").run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
                    assertThat(runtime.backend()).isEqualTo("mlx");
                    ServingRuntime.Loaded loaded = runtime.whenLoaded().get(120, TimeUnit.SECONDS);
                    assertThat(loaded.model().transformer().backend().describe()).startsWith("mlx: MLX ");
                    assertThat(loaded.model().transformer().deviceDescription()).startsWith("MLX decoder on Device(");
                });
    }
}
