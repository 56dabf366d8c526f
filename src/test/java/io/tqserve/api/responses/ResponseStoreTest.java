package io.tqserve.api.responses;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.api.openai.Wire;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.ArrayNode;

/** The kept responses: tenants apart, the count, byte and age bounds, delete. */
class ResponseStoreTest {
    static ArrayNode conversation(String text) {
        ArrayNode a = Wire.MAPPER.createArrayNode();
        a.addObject().put("role", "user").put("content", text);
        return a;
    }

    /** A clock the test moves. */
    static final class TestClock extends Clock {
        long millis;

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis);
        }
    }

    @Test
    void tenantsDoNotSeeEachOthersResponses() {
        ResponseStore s = new ResponseStore(new ResponseStore.Limits(10, 1 << 20, Duration.ofHours(1)));
        s.put("a", "resp_1", "{\"id\":\"resp_1\"}", conversation("hi"));
        assertThat(s.get("a", "resp_1")).map(ResponseStore.Stored::response).hasValue("{\"id\":\"resp_1\"}");
        assertThat(s.get("b", "resp_1")).isEmpty();
        assertThat(s.delete("b", "resp_1")).isFalse();
        assertThat(s.delete("a", "resp_1")).isTrue();
        assertThat(s.get("a", "resp_1")).isEmpty();
    }

    @Test
    void theOldestGoFirstPastTheCountOrTheBytes() {
        ResponseStore s = new ResponseStore(new ResponseStore.Limits(2, 1 << 20, Duration.ofHours(1)));
        for (int i = 1; i <= 3; i++) {
            s.put("a", "resp_" + i, "{}", conversation("x"));
        }
        assertThat(s.size("a")).isEqualTo(2);
        assertThat(s.get("a", "resp_1")).isEmpty();
        assertThat(s.get("a", "resp_3")).isPresent();
        // each entry: 2 bytes per character of the response and the conversation's JSON
        long one = 2L * ("{}".length() + conversation("x").toString().length());
        ResponseStore bytes = new ResponseStore(new ResponseStore.Limits(100, 2 * one, Duration.ofHours(1)));
        for (int i = 1; i <= 3; i++) {
            bytes.put("a", "resp_" + i, "{}", conversation("x"));
        }
        assertThat(bytes.size("a")).isEqualTo(2);
        assertThat(bytes.get("a", "resp_1")).isEmpty();
        bytes.put("a", "big", "x".repeat((int) one * 2), conversation("x"));
        assertThat(bytes.get("a", "big")).isEmpty(); // larger than a tenant may keep: not kept, nothing evicted
        assertThat(bytes.size("a")).isEqualTo(2);
    }

    @Test
    void responsesExpireAfterTheTtl() {
        TestClock clock = new TestClock();
        ResponseStore s = new ResponseStore(new ResponseStore.Limits(10, 1 << 20, Duration.ofMinutes(1)), clock);
        s.put("a", "resp_1", "{}", conversation("x"));
        clock.millis += 30_000;
        s.put("a", "resp_2", "{}", conversation("x"));
        clock.millis += 40_000;
        assertThat(s.get("a", "resp_1")).isEmpty();
        assertThat(s.get("a", "resp_2")).isPresent();
        ResponseStore none = new ResponseStore(new ResponseStore.Limits(0, 1 << 20, Duration.ofMinutes(1)));
        none.put("a", "resp_1", "{}", conversation("x"));
        assertThat(none.get("a", "resp_1")).isEmpty();
    }
}
