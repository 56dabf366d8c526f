package io.tqserve.kv.store;

import io.tqserve.kv.KvScheme;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Named KV snapshots on disk, under {@code <dir>/<model-fingerprint>/<id>.tqkv}. Ids are random 128-bit hex
 * strings; an id is checked against that exact form before it is turned into a path, so a request can never name
 * a file of its choosing. Snapshots of another model are invisible (other folder) and refused if copied in.
 */
public final class SnapshotStore {
    private static final Pattern ID = Pattern.compile("[0-9a-f]{32}");
    private final Path dir;
    private final String fingerprint;
    private final String tokenizerHash;
    private final SecureRandom random = new SecureRandom();

    /** What the API reports of a snapshot. */
    public record Info(String id, int tokens, long bytes, KvScheme scheme) {
    }

    public SnapshotStore(Path root, String fingerprint, String tokenizerHash) {
        this.dir = root.resolve(fingerprint);
        this.fingerprint = fingerprint;
        this.tokenizerHash = tokenizerHash;
    }

    public static boolean validId(String id) {
        return id != null && ID.matcher(id).matches();
    }

    /** Writes the snapshot atomically under a new id. */
    public Info save(KvSnapshot snapshot) throws SnapshotException {
        byte[] b = new byte[16];
        random.nextBytes(b);
        String id = HexFormat.of().formatHex(b);
        Path file = dir.resolve(id + ".tqkv");
        snapshot.write(file);
        try {
            return new Info(id, snapshot.tokens().length, Files.size(file), snapshot.scheme());
        } catch (IOException e) {
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot stat " + file + ": " + e.getMessage(), e);
        }
    }

    /** Every snapshot of this model that validates; damaged files are skipped. */
    public List<Info> list() {
        List<Info> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".tqkv")).sorted().toList()) {
                String name = f.getFileName().toString();
                String id = name.substring(0, name.length() - 5);
                if (!validId(id)) {
                    continue;
                }
                try (Arena arena = Arena.ofConfined()) {
                    KvSnapshot s = KvSnapshot.read(f, null, fingerprint, tokenizerHash, arena);
                    out.add(new Info(id, s.tokens().length, Files.size(f), s.scheme()));
                } catch (SnapshotException | IOException e) {
                    // a damaged or foreign file is not listed; loading it by id reports why
                }
            }
        } catch (IOException e) {
            return out;
        }
        return out;
    }

    /** Loads and validates a snapshot; empty when no snapshot has that id. */
    public Optional<KvSnapshot> load(String id) throws SnapshotException {
        if (!validId(id)) {
            return Optional.empty();
        }
        Path file = dir.resolve(id + ".tqkv");
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        return Optional.of(KvSnapshot.read(file, null, fingerprint, tokenizerHash, Arena.ofAuto()));
    }

    /** Deletes a snapshot; false when no snapshot has that id. */
    public boolean delete(String id) throws SnapshotException {
        if (!validId(id)) {
            return false;
        }
        try {
            return Files.deleteIfExists(dir.resolve(id + ".tqkv"));
        } catch (IOException e) {
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot delete snapshot " + id + ": " + e.getMessage(), e);
        }
    }
}
