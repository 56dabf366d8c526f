package io.tqserve.kv.store;

import io.tqserve.kv.KvScheme;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Named KV snapshots on disk, under {@code <dir>/<model-fingerprint>/<id>.tqkv} for the shared owner and
 * {@code <dir>/<model-fingerprint>/<owner>/<id>.tqkv} for the others (an owner is a tenant id: 32 hex
 * characters). Ids are random 128-bit hex strings; an id is checked against that exact form before it is turned
 * into a path, so a request can never name a file of its choosing, and only a regular file (not a directory, not a
 * symbolic link) of that name is a snapshot. An owner sees, loads and deletes only its own snapshots. Saving
 * respects the {@link Quota}. Snapshots of another model are invisible (other folder) and refused if copied in.
 * Error messages never name a path.
 */
public final class SnapshotStore {
    private static final Pattern ID = Pattern.compile("[0-9a-f]{32}");
    private final Path dir;
    private final String fingerprint;
    private final String tokenizerHash;
    private final Quota quota;
    private final SecureRandom random = new SecureRandom();

    /** What the API reports of a snapshot. */
    public record Info(String id, int tokens, long bytes, KvScheme scheme) {
    }

    /**
     * Limits of the store; 0 = no limit.
     *
     * @param maxCount         snapshots in all
     * @param maxBytes         bytes of snapshots in all
     * @param maxCountPerOwner snapshots of one owner
     * @param maxBytesPerOwner bytes of snapshots of one owner
     */
    public record Quota(int maxCount, long maxBytes, int maxCountPerOwner, long maxBytesPerOwner) {
        public static final Quota NONE = new Quota(0, 0, 0, 0);
    }

    /** A save refused by the quota; the message says which limit (no path). */
    public static final class QuotaExceededException extends Exception {
        public QuotaExceededException(String message) {
            super(message);
        }
    }

    public SnapshotStore(Path root, String fingerprint, String tokenizerHash) {
        this(root, fingerprint, tokenizerHash, Quota.NONE);
    }

    public SnapshotStore(Path root, String fingerprint, String tokenizerHash, Quota quota) {
        this.dir = root.resolve(fingerprint);
        this.fingerprint = fingerprint;
        this.tokenizerHash = tokenizerHash;
        this.quota = quota;
    }

    public static boolean validId(String id) {
        return id != null && ID.matcher(id).matches();
    }

    private Path ownerDir(String owner) {
        if (!PromptCache.validNamespace(owner)) {
            throw new IllegalArgumentException("an owner is empty or 32 lower-case hex characters");
        }
        return owner.isEmpty() ? dir : dir.resolve(owner);
    }

    /** The snapshot file of an id when it exists as a regular file (never a directory or a link). */
    private Optional<Path> file(String owner, String id) {
        if (!validId(id)) {
            return Optional.empty();
        }
        Path folder = ownerDir(owner);
        Path f = folder.resolve(id + ".tqkv");
        return Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS) && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)
                ? Optional.of(f) : Optional.empty();
    }

    /**
     * Refuses early (before a snapshot is taken) when the owner or the store is already at a count or byte limit.
     */
    public synchronized void checkRoom(String owner) throws QuotaExceededException {
        check(owner, true);
    }

    /**
     * Checks the limits: {@code before} a save, that there is room for one more snapshot (every count and byte
     * total below its limit); after it (the new file counted), that no limit is passed.
     */
    private void check(String owner, boolean before) throws QuotaExceededException {
        Usage own = usage(ownerDir(owner));
        Usage all = totalUsage();
        if (passes(own.count, quota.maxCountPerOwner(), before)) {
            throw new QuotaExceededException("this API key has " + own.count + " snapshots, the most it may keep is "
                    + quota.maxCountPerOwner() + "; delete some first");
        }
        if (passes(all.count, quota.maxCount(), before)) {
            throw new QuotaExceededException("the server keeps at most " + quota.maxCount() + " snapshots");
        }
        if (passes(own.bytes, quota.maxBytesPerOwner(), before)) {
            throw new QuotaExceededException("this API key's snapshots may take at most " + quota.maxBytesPerOwner()
                    + " bytes; delete some first");
        }
        if (passes(all.bytes, quota.maxBytes(), before)) {
            throw new QuotaExceededException("the server's snapshots may take at most " + quota.maxBytes() + " bytes");
        }
    }

    private static boolean passes(long value, long limit, boolean before) {
        return limit > 0 && (before ? value >= limit : value > limit);
    }

    private record Usage(int count, long bytes) {
    }

    private static Usage usage(Path folder) {
        int count = 0;
        long bytes = 0;
        if (!Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS)) {
            return new Usage(0, 0);
        }
        try (var files = Files.list(folder)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                if (name.endsWith(".tqkv") && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    count++;
                    bytes += Files.size(f);
                }
            }
        } catch (IOException e) {
            // a folder that cannot be listed holds nothing this store can serve
        }
        return new Usage(count, bytes);
    }

    private Usage totalUsage() {
        Usage shared = usage(dir);
        int count = shared.count;
        long bytes = shared.bytes;
        if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            try (var entries = Files.list(dir)) {
                for (Path p : entries.toList()) {
                    String name = p.getFileName().toString();
                    if (ID.matcher(name).matches() && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                        Usage u = usage(p);
                        count += u.count;
                        bytes += u.bytes;
                    }
                }
            } catch (IOException e) {
                // as above
            }
        }
        return new Usage(count, bytes);
    }

    /** Writes the snapshot atomically under a new id, unless that would pass the quota. */
    public synchronized Info save(String owner, KvSnapshot snapshot) throws SnapshotException, QuotaExceededException {
        check(owner, true);
        byte[] b = new byte[16];
        random.nextBytes(b);
        String id = HexFormat.of().formatHex(b);
        Path file = ownerDir(owner).resolve(id + ".tqkv");
        snapshot.write(file);
        long size;
        try {
            size = Files.size(file);
        } catch (IOException e) {
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot read back the snapshot's size", e);
        }
        try {
            check(owner, false); // the new file is counted: the limits must hold with it
        } catch (QuotaExceededException e) {
            deleteQuietly(file);
            throw new QuotaExceededException("the snapshot (" + size + " bytes) does not fit: " + e.getMessage());
        }
        return new Info(id, snapshot.tokens().length, size, snapshot.scheme());
    }

    /** Every snapshot of the owner that validates; damaged files are skipped. */
    public List<Info> list(String owner) {
        List<Info> out = new ArrayList<>();
        Path folder = ownerDir(owner);
        if (!Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS)) {
            return out;
        }
        try (var files = Files.list(folder)) {
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".tqkv")).sorted().toList()) {
                String name = f.getFileName().toString();
                String id = name.substring(0, name.length() - 5);
                if (file(owner, id).isEmpty()) {
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

    /** Loads and validates one of the owner's snapshots; empty when the owner has no snapshot with that id. */
    public Optional<KvSnapshot> load(String owner, String id) throws SnapshotException {
        Optional<Path> f = file(owner, id);
        if (f.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(KvSnapshot.read(f.get(), null, fingerprint, tokenizerHash, Arena.ofAuto()));
    }

    /** Deletes one of the owner's snapshots; false when the owner has no snapshot with that id. */
    public synchronized boolean delete(String owner, String id) throws SnapshotException {
        Optional<Path> f = file(owner, id);
        if (f.isEmpty()) {
            return false;
        }
        try {
            return Files.deleteIfExists(f.get());
        } catch (IOException e) {
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot delete snapshot " + id, e);
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // left behind: counted against the quota until deleted
        }
    }
}
