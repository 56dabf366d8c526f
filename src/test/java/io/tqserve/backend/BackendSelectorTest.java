package io.tqserve.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.MlxOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Backend selection and MLX-C library discovery (no libmlxc needed: discovery never loads the file). */
class BackendSelectorTest {
    static final String LIB = BackendSelector.libraryFileName();

    @Test
    void parsesTheThreeTypesAndRejectsOthers() {
        assertEquals(BackendSelector.Type.AUTO, BackendSelector.Type.parse("auto"));
        assertEquals(BackendSelector.Type.CPU, BackendSelector.Type.parse("CPU"));
        assertEquals(BackendSelector.Type.MLX, BackendSelector.Type.parse(" mlx "));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BackendSelector.Type.parse("cuda"));
        assertTrue(e.getMessage().contains("auto, cpu, mlx"), e.getMessage());
    }

    @Test
    void settingWinsOverEnvironmentWhichWinsOverDefaultFolders(@TempDir Path tmp) throws Exception {
        Path a = Files.createDirectories(tmp.resolve("a"));
        Path b = Files.createDirectories(tmp.resolve("b"));
        Path c = Files.createDirectories(tmp.resolve("c"));
        for (Path dir : List.of(a, b, c)) {
            Files.createFile(dir.resolve(LIB));
        }
        Map<String, String> env = Map.of(BackendSelector.ENV, b.toString());
        assertEquals(a.resolve(LIB), BackendSelector.discover(a.toString(), env, List.of(c)).library().orElseThrow());
        assertEquals(b.resolve(LIB), BackendSelector.discover(null, env, List.of(c)).library().orElseThrow());
        assertEquals(c.resolve(LIB), BackendSelector.discover(" ", Map.of(), List.of(c)).library().orElseThrow());
        // a setting naming the file itself
        assertEquals(a.resolve(LIB),
                BackendSelector.discover(a.resolve(LIB).toString(), Map.of(), List.of()).library().orElseThrow());
    }

    @Test
    void anAbsentSettingFallsThroughToTheNextPlaceAndIsReported(@TempDir Path tmp) throws Exception {
        Path c = Files.createDirectories(tmp.resolve("c"));
        Files.createFile(c.resolve(LIB));
        BackendSelector.Discovery d = BackendSelector.discover(tmp.resolve("nowhere/libmlxc.so").toString(), Map.of(),
                List.of(c));
        assertEquals(c.resolve(LIB), d.library().orElseThrow());
        assertTrue(d.searchedText().contains("nowhere/libmlxc.so (absent)"), d.searchedText());
        assertTrue(d.searchedText().contains("MLXC_LIBRARY (unset)"), d.searchedText());
    }

    @Test
    void autoWithoutALibraryChoosesCpuAndNamesEveryPlaceItLooked(@TempDir Path tmp) {
        Path empty = tmp.resolve("lib");
        BackendSelector.Selection s = BackendSelector.select(BackendSelector.Type.AUTO, 1, null, Map.of(),
                List.of(empty, tmp.resolve("other")));
        try (ComputeBackend backend = s.backend()) {
            assertEquals("cpu", backend.name());
            assertTrue(s.reason().startsWith("backend auto -> cpu: no MLX-C library"), s.reason());
            assertTrue(s.reason().contains("tqserve.backend.mlx.library (unset)"), s.reason());
            assertTrue(s.reason().contains("MLXC_LIBRARY (unset)"), s.reason());
            assertTrue(s.reason().contains(empty.resolve(LIB) + " (absent)"), s.reason());
            assertTrue(s.reason().contains(tmp.resolve("other").resolve(LIB) + " (absent)"), s.reason());
        }
    }

    @Test
    void mlxWithoutALibraryFailsNamingThePathsSearched(@TempDir Path tmp) {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> BackendSelector.select(
                BackendSelector.Type.MLX, 1, tmp.resolve("x").toString(), Map.of(BackendSelector.ENV, "/no/such"),
                List.of(tmp.resolve("homebrew"), tmp.resolve("local"))));
        assertTrue(e.getMessage().contains(tmp.resolve("x") + " (absent)"), e.getMessage());
        assertTrue(e.getMessage().contains("MLXC_LIBRARY: /no/such (absent)"), e.getMessage());
        assertTrue(e.getMessage().contains(tmp.resolve("homebrew").resolve(LIB) + " (absent)"), e.getMessage());
        assertTrue(e.getMessage().contains(tmp.resolve("local").resolve(LIB) + " (absent)"), e.getMessage());
    }

    @Test
    void mlxWithAFileThatIsNotALibraryFailsWithTheLoaderReason(@TempDir Path tmp) throws Exception {
        Path fake = Files.writeString(tmp.resolve(LIB), "not an ELF or Mach-O file");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> BackendSelector.select(
                BackendSelector.Type.MLX, 1, fake.toString(), Map.of(), List.of()));
        assertTrue(e.getMessage().startsWith("backend mlx: cannot use " + fake), e.getMessage());
        BackendSelector.Selection auto = BackendSelector.select(BackendSelector.Type.AUTO, 1, fake.toString(), Map.of(),
                List.of());
        try (ComputeBackend backend = auto.backend()) {
            assertEquals("cpu", backend.name());
            assertTrue(auto.reason().contains("failed to load"), auto.reason());
        }
    }

    /** turbo-kernel=metal is refused whenever the backend would not be MLX: requested cpu, or auto falling back. */
    @Test
    void theMetalTurboKernelIsRefusedWithoutTheMlxBackend(@TempDir Path tmp) {
        MlxOptions metal = MlxOptions.DEFAULTS.withTurboKernel(MlxOptions.TurboKernel.METAL);
        IllegalStateException cpu = assertThrows(IllegalStateException.class, () -> BackendSelector.select(
                BackendSelector.Type.CPU, 1, null, Map.of(), List.of(), metal));
        assertTrue(cpu.getMessage().startsWith("tqserve.backend.mlx.turbo-kernel=metal needs the mlx backend on a "
                + "Metal device, but backend cpu (requested)"), cpu.getMessage());
        assertTrue(cpu.getMessage().endsWith("; use tqserve.backend.mlx.turbo-kernel=auto or ops"), cpu.getMessage());
        IllegalStateException auto = assertThrows(IllegalStateException.class, () -> BackendSelector.select(
                BackendSelector.Type.AUTO, 1, null, Map.of(), List.of(tmp.resolve("none")), metal));
        assertTrue(auto.getMessage().contains("but backend auto -> cpu: no MLX-C library"), auto.getMessage());
    }

    @Test
    void cpuIsChosenWhenRequested() {
        BackendSelector.Selection s = BackendSelector.select("cpu", 1, "/whatever");
        try (ComputeBackend backend = s.backend()) {
            assertEquals("cpu", backend.name());
            assertTrue(s.reason().startsWith("backend cpu (requested)"), s.reason());
        }
    }
}
