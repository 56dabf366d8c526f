package io.tqserve.api;

import java.nio.file.Path;

/** Where KV snapshots live ({@code tqserve.store.dir}/snapshots); null dir = the snapshot API is off. */
public record SnapshotSettings(Path dir) {
}
