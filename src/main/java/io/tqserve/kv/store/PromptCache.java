package io.tqserve.kv.store;

import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvScheme;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * A lane's prompt (prefix) cache: a byte-capped LRU of KV prefixes keyed by their token ids, in the lane's own
 * KV format (quantized prefixes are reused as they are). A new request restores the longest cached prefix and
 * prefills only the rest. With a directory set, entries evicted from memory spill to disk under
 * {@code <dir>/<model-fingerprint>/} (byte-capped too) and are found again after a restart. Thread-safe.
 *
 * <p>Entries live in namespaces: a request only reuses prefixes cached by requests of its own namespace, so the
 * cached token count it is told never reveals what another tenant's prompts began with. The empty namespace is
 * the shared one; any other is a 32-character lower-case hex string (the API derives it from a hash of the API
 * key and the request's {@code cache_salt}), whose spilled entries live in a sub-folder of that name.
 */
public final class PromptCache implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PromptCache.class.getName());
    /** The namespace of requests that are not told apart (a server without API keys, no cache_salt). */
    public static final String SHARED = "";
    private static final Pattern NAMESPACE = Pattern.compile("[0-9a-f]{32}");

    /** One cached prefix: its snapshot and the arena owning the snapshot's memory. */
    private record Entry(String namespace, KvSnapshot snapshot, Arena arena) {
        long bytes() {
            return snapshot.payloadBytes() + 4L * snapshot.tokens().length + 4L * snapshot.logits().length;
        }
    }

    /** A prefix on disk: its tokens (for matching), file and size. */
    private record DiskEntry(String namespace, int[] tokens, Path file, long bytes) {
    }

    /** What a restore reused. */
    public record Reuse(int tokens, float[] logits) {
        public static final Reuse NONE = new Reuse(0, null);

        /** True when the whole prompt came from the cache and {@link #logits} are its next-token logits. */
        public boolean complete(int promptLength) {
            return tokens == promptLength && logits != null;
        }
    }

    private final KvScheme scheme;
    private final AttentionShape shape;
    private final long maxBytes;
    private final int minTokens;
    private final String fingerprint;
    private final String tokenizerHash;
    private final Path diskDir;
    private final long diskMaxBytes;
    private final LinkedHashMap<String, Entry> memory = new LinkedHashMap<>(16, 0.75f, true);
    private final LinkedHashMap<String, DiskEntry> disk = new LinkedHashMap<>(16, 0.75f, true);
    private long memoryBytes;
    private long diskBytes;
    private final AtomicLong queries = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();

    /**
     * @param maxBytes     memory cap (0 disables the cache)
     * @param minTokens    shortest prompt worth caching
     * @param diskDir      spill directory or null; entries go to {@code diskDir/<fingerprint>/}
     * @param diskMaxBytes disk cap
     */
    public PromptCache(KvScheme scheme, AttentionShape shape, long maxBytes, int minTokens, String fingerprint,
            String tokenizerHash, Path diskDir, long diskMaxBytes) {
        this.scheme = scheme;
        this.shape = shape;
        this.maxBytes = maxBytes;
        this.minTokens = Math.max(1, minTokens);
        this.fingerprint = fingerprint;
        this.tokenizerHash = tokenizerHash;
        this.diskDir = diskDir == null ? null : diskDir.resolve(fingerprint).resolve(scheme.id().replace(':', '-'));
        this.diskMaxBytes = diskMaxBytes;
        if (this.diskDir != null) {
            scanDisk();
        }
    }

    public boolean enabled() {
        return maxBytes > 0;
    }

    public long queries() {
        return queries.get();
    }

    public long hits() {
        return hits.get();
    }

    public synchronized long memoryBytes() {
        return memoryBytes;
    }

    public synchronized long diskBytes() {
        return diskBytes;
    }

    /**
     * Restores the longest cached prefix of {@code prompt} into the empty {@code cache}. At most
     * {@code prompt.length - 1} tokens are restored unless the cached entry is exactly the prompt (then its stored
     * next-token logits come back too), so the caller always has logits to sample from.
     */
    public Reuse restoreLongestPrefix(int[] prompt, KvCache cache) {
        return restoreLongestPrefix(SHARED, prompt, cache);
    }

    /** {@link #restoreLongestPrefix(int[], KvCache)} among the entries of one namespace. */
    public synchronized Reuse restoreLongestPrefix(String namespace, int[] prompt, KvCache cache) {
        checkNamespace(namespace);
        if (!enabled()) {
            return Reuse.NONE;
        }
        queries.incrementAndGet();
        String bestKey = null;
        int best = 0;
        for (Map.Entry<String, Entry> e : memory.entrySet()) {
            if (!e.getValue().namespace().equals(namespace)) {
                continue;
            }
            int common = commonPrefix(e.getValue().snapshot().tokens(), prompt);
            if (common > best) {
                best = common;
                bestKey = e.getKey();
            }
        }
        String bestDisk = null;
        for (Map.Entry<String, DiskEntry> e : disk.entrySet()) {
            if (!e.getValue().namespace().equals(namespace)) {
                continue;
            }
            int common = commonPrefix(e.getValue().tokens(), prompt);
            if (common > best) {
                best = common;
                bestDisk = e.getKey();
            }
        }
        if (bestDisk != null) {
            bestKey = promote(bestDisk);
            if (bestKey == null) {
                return Reuse.NONE;
            }
        }
        if (bestKey == null || best < minTokens) {
            return Reuse.NONE;
        }
        KvSnapshot snap = memory.get(bestKey).snapshot();
        boolean exact = snap.tokens().length == prompt.length && best == prompt.length;
        int reuse = exact ? best : Math.min(best, prompt.length - 1);
        if (reuse < minTokens) {
            return Reuse.NONE;
        }
        long perToken = (long) shape.numKvHeads() * cache.layout().bytesPerTokenPerHead();
        for (int l = 0; l < shape.layers(); l++) {
            cache.importLayer(l, reuse, snap.layers()[l].asSlice(0, perToken * reuse));
        }
        cache.advance(reuse);
        hits.incrementAndGet();
        return new Reuse(reuse, exact ? snap.logits().clone() : null);
    }

    /** Caches the first {@code prompt.length} tokens of {@code cache} with the logits that follow them. */
    public void insert(int[] prompt, KvCache cache, float[] logits) {
        insert(SHARED, prompt, cache, logits);
    }

    /** {@link #insert(int[], KvCache, float[])} into one namespace. */
    public synchronized void insert(String namespace, int[] prompt, KvCache cache, float[] logits) {
        checkNamespace(namespace);
        if (!enabled() || prompt.length < minTokens || !cache.scheme().equals(scheme)) {
            return;
        }
        String key = key(namespace, prompt);
        if (memory.containsKey(key)) {
            memory.get(key); // touch
            return;
        }
        Arena arena = Arena.ofShared();
        KvSnapshot snap = KvSnapshot.capture(cache, prompt, logits, fingerprint, tokenizerHash, arena);
        Entry entry = new Entry(namespace, snap, arena);
        if (entry.bytes() > maxBytes) {
            arena.close();
            return;
        }
        memory.put(key, entry);
        memoryBytes += entry.bytes();
        evict();
    }

    private void evict() {
        Iterator<Map.Entry<String, Entry>> it = memory.entrySet().iterator();
        while (memoryBytes > maxBytes && it.hasNext()) {
            Map.Entry<String, Entry> e = it.next();
            it.remove();
            memoryBytes -= e.getValue().bytes();
            spill(e.getKey(), e.getValue());
            e.getValue().arena().close();
        }
    }

    private void spill(String key, Entry e) {
        if (diskDir == null || disk.containsKey(key)) {
            return;
        }
        Path file = (e.namespace().isEmpty() ? diskDir : diskDir.resolve(e.namespace())).resolve(key + ".tqkv");
        try {
            e.snapshot().write(file);
            long size = Files.size(file);
            disk.put(key, new DiskEntry(e.namespace(), e.snapshot().tokens(), file, size));
            diskBytes += size;
            Iterator<Map.Entry<String, DiskEntry>> it = disk.entrySet().iterator();
            while (diskBytes > diskMaxBytes && it.hasNext()) {
                DiskEntry old = it.next().getValue();
                it.remove();
                diskBytes -= old.bytes();
                Files.deleteIfExists(old.file());
            }
        } catch (SnapshotException | IOException ex) {
            LOG.log(System.Logger.Level.WARNING, "prompt cache: could not spill to " + file + ": " + ex.getMessage());
        }
    }

    /** Loads a disk entry back into memory; returns its key, or null when the file no longer validates. */
    private String promote(String key) {
        DiskEntry d = disk.get(key);
        Arena arena = Arena.ofShared();
        try {
            KvSnapshot snap = KvSnapshot.read(d.file(), scheme, fingerprint, tokenizerHash, arena);
            Entry entry = new Entry(d.namespace(), snap, arena);
            memory.put(key, entry);
            memoryBytes += entry.bytes();
            evictExcept(key);
            return key;
        } catch (SnapshotException e) {
            arena.close();
            disk.remove(key);
            diskBytes -= d.bytes();
            LOG.log(System.Logger.Level.WARNING, "prompt cache: dropping " + d.file() + ": " + e.getMessage());
            return null;
        }
    }

    private void evictExcept(String keep) {
        Iterator<Map.Entry<String, Entry>> it = memory.entrySet().iterator();
        while (memoryBytes > maxBytes && it.hasNext()) {
            Map.Entry<String, Entry> e = it.next();
            if (e.getKey().equals(keep)) {
                continue;
            }
            it.remove();
            memoryBytes -= e.getValue().bytes();
            spill(e.getKey(), e.getValue());
            e.getValue().arena().close();
        }
    }

    /** Indexes the snapshots a previous run left in the spill directory (tokens only; payloads load on a hit). */
    private void scanDisk() {
        try {
            Files.createDirectories(diskDir);
            List<Path> files = new ArrayList<>();
            try (var s = Files.list(diskDir)) {
                for (Path p : s.toList()) {
                    if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) && validNamespace(p.getFileName().toString())) {
                        try (var inner = Files.list(p)) {
                            inner.filter(PromptCache::isEntryFile).forEach(files::add);
                        }
                    } else if (isEntryFile(p)) {
                        files.add(p);
                    }
                }
            }
            files.sort((a, b) -> {
                try {
                    return Files.getLastModifiedTime(a).compareTo(Files.getLastModifiedTime(b));
                } catch (IOException e) {
                    return 0;
                }
            });
            for (Path f : files) {
                try (Arena arena = Arena.ofConfined()) {
                    KvSnapshot snap = KvSnapshot.read(f, scheme, fingerprint, tokenizerHash, arena);
                    long size = Files.size(f);
                    String name = f.getFileName().toString();
                    String namespace = f.getParent().equals(diskDir) ? SHARED : f.getParent().getFileName().toString();
                    disk.put(name.substring(0, name.length() - 5), new DiskEntry(namespace, snap.tokens(), f, size));
                    diskBytes += size;
                } catch (SnapshotException e) {
                    LOG.log(System.Logger.Level.WARNING, "prompt cache: ignoring " + f + ": " + e.getMessage());
                }
            }
            try (var s = Files.list(diskDir)) {
                for (Path p : s.filter(p -> p.getFileName().toString().contains(".tqkv.tmp-")).toList()) {
                    Files.deleteIfExists(p); // an interrupted write: never a snapshot
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "prompt cache: cannot use " + diskDir + ": " + e.getMessage());
        }
    }

    static int commonPrefix(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        int mismatch = Arrays.mismatch(a, 0, n, b, 0, n);
        return mismatch < 0 ? n : mismatch;
    }

    private static boolean isEntryFile(Path p) {
        return p.getFileName().toString().endsWith(".tqkv") && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS);
    }

    /** True for the shared namespace ("") and for 32 lower-case hex characters. */
    public static boolean validNamespace(String namespace) {
        return namespace != null && (namespace.isEmpty() || NAMESPACE.matcher(namespace).matches());
    }

    private static void checkNamespace(String namespace) {
        if (!validNamespace(namespace)) {
            throw new IllegalArgumentException("a prompt-cache namespace is empty or 32 lower-case hex characters");
        }
    }

    /** A file-name-safe key: hex SHA-256 of the namespace (when not shared) and the token ids. */
    static String key(String namespace, int[] tokens) {
        try {
            var md = java.security.MessageDigest.getInstance("SHA-256");
            md.update(namespace.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            var buf = java.nio.ByteBuffer.allocate(tokens.length * 4);
            for (int t : tokens) {
                buf.putInt(t);
            }
            md.update(buf.array());
            return java.util.HexFormat.of().formatHex(md.digest()).substring(0, 32);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Spills every in-memory entry to disk (when a directory is set) and frees the memory. */
    @Override
    public synchronized void close() {
        for (Map.Entry<String, Entry> e : memory.entrySet()) {
            spill(e.getKey(), e.getValue());
            e.getValue().arena().close();
        }
        memory.clear();
        memoryBytes = 0;
    }
}
