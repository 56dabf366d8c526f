package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import dk.brics.automaton.Automaton;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each supported {@code format}: strings its RFC allows are accepted, near misses are not. */
class FormatsTest {
    private static final Map<String, List<String>> VALID = Map.of(
            "date", List.of("2024-01-31", "1999-12-01", "0001-02-28", "2023-04-30"),
            "time", List.of("23:59:59Z", "00:00:00+05:30", "12:34:56.789-08:00"),
            "date-time", List.of("2024-05-06T07:08:09Z", "2024-05-06T07:08:09.5+01:00"),
            "uuid", List.of("123e4567-e89b-12d3-a456-426614174000", "A23E4567-E89B-12D3-A456-426614174000"),
            "ipv4", List.of("0.0.0.0", "192.168.1.255", "255.255.255.255"),
            "ipv6", List.of("::", "::1", "2001:db8::8a2e:370:7334", "fe80:0:0:0:200:f8ff:fe21:67cf", "1::"),
            "email", List.of("a@b.co", "first.last+tag@sub.example.org"),
            "uri", List.of("https://example.com/a/b?x=1&y=%20#frag", "mailto:joe@example.com", "urn:isbn:0451450523",
                    "http://localhost:8080", "file:///path/to/file1.js", "file:///C:/Users/username/Templates"),
            "hostname", List.of("example.com", "a-b.c", "localhost"),
            "uri-reference", List.of("https://example.com/a", "../a/b?x=1", "/a/b#f", "a/b:c", "#frag", "",
                    "//host:80/p"));
    private static final Map<String, List<String>> INVALID = Map.of(
            "date", List.of("2024-02-30", "2024-13-01", "2024-04-31", "0000-01-01", "2024-1-01", "2024-01-01T"),
            "time", List.of("24:00:00Z", "12:60:00Z", "12:00:00", "12:00Z", "12:00:00+5:30"),
            "date-time", List.of("2024-05-06 07:08:09Z", "2024-05-06T07:08:09"),
            "uuid", List.of("123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"),
            "ipv4", List.of("256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5"),
            "ipv6", List.of(":::", "1:2:3:4:5:6:7:8:9", "12345::", "1::2::3", "g::1"),
            "email", List.of("a@b", "a b@c.d", "@b.co", "a@-b.co", "a..b@c.de"),
            "uri", List.of("example.com", "http://exa mple.com", "http://[::1]", "1http://x", "http://x:123456"),
            "hostname", List.of("-a.com", "a..b", "a_b.com", ""),
            "uri-reference", List.of("a b", "a:b c", "%zz", "http://x:123456", "\\path"));

    @Test
    void acceptsTheFormatAndRejectsNearMisses() {
        assertThat(Formats.SUPPORTED).containsExactlyInAnyOrderElementsOf(VALID.keySet());
        for (String f : Formats.SUPPORTED) {
            Automaton a = Formats.chars(f);
            for (String s : VALID.get(f)) {
                assertThat(a.run(s)).as("%s %s", f, s).isTrue();
            }
            for (String s : INVALID.get(f)) {
                assertThat(a.run(s)).as("%s %s", f, s).isFalse();
            }
        }
        assertThat(Formats.chars("regex")).isNull();
    }
}
