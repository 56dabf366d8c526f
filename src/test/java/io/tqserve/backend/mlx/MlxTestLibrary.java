package io.tqserve.backend.mlx;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.mlx.ffm.Mlx;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/**
 * Finds libmlxc for the {@code mlx}-tagged tests the way the server does (system property
 * {@code tqserve.backend.mlx.library}, then {@code MLXC_LIBRARY}, then /opt/homebrew/lib and /usr/local/lib) and
 * skips the calling test, naming every place looked at, when there is none (CI has no libmlxc).
 */
public final class MlxTestLibrary {
    private MlxTestLibrary() {
    }

    /** The opened runtime, or an aborted (skipped) test. */
    public static Mlx open() {
        BackendSelector.Discovery d = BackendSelector.discover(System.getProperty("tqserve.backend.mlx.library"),
                System.getenv(), BackendSelector.DEFAULT_DIRS);
        Assumptions.assumeTrue(d.library().isPresent(),
                () -> "libmlxc not found, MLX test skipped; looked at: " + d.searchedText());
        Path lib = d.library().get();
        return Mlx.open(lib);
    }
}
