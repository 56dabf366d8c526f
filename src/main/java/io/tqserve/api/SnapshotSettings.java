package io.tqserve.api;

import io.tqserve.kv.store.SnapshotStore;
import java.nio.file.Path;

/**
 * Where KV snapshots live ({@code tqserve.store.dir}/snapshots; null dir = the snapshot API is off) and how many
 * bytes and files they may take ({@code tqserve.store.snapshots.*}).
 */
public record SnapshotSettings(Path dir, SnapshotStore.Quota quota) {
    /** Without limits. */
    public SnapshotSettings(Path dir) {
        this(dir, SnapshotStore.Quota.NONE);
    }
}
