package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Python semantics the chat-template engine relies on; every expected value was printed by CPython 3.11. */
class PythonSemanticsTest {

    @Test
    void floatReprMatchesPythonReprIncludingExponentThresholds() {
        double[] values = {1e16, 1e15, 0.0001, 0.1 + 0.2, 123456789.123, -1e-300, Double.MIN_VALUE, Double.MAX_VALUE,
            2.5, 100.0, 1e22, 12345678901234567.0, 1e-5, -0.0, 0.0, 1e-323, 1e-322};
        String[] python = {"1e+16", "1000000000000000.0", "0.0001", "0.30000000000000004", "123456789.123",
            "-1e-300", "5e-324", "1.7976931348623157e+308", "2.5", "100.0", "1e+22", "1.2345678901234568e+16",
            "1e-05", "-0.0", "0.0", "1e-323", "1e-322"};
        for (int i = 0; i < values.length; i++) {
            assertEquals(python[i], PythonValues.floatRepr(values[i]), "repr(" + values[i] + ")");
        }
    }

    @Test
    void jsonDumpsMatchesPythonWithIndentSeparatorsAndSortKeys() {
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("a", List.of(1, Map.of()));
        nested.put("b", List.of());
        nested.put("c", "\u007f\u2028");
        assertEquals("{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": \"\u007f\u2028\"\n}",
                new PythonValues(2, null, false).write(nested));
        Map<String, Object> unsorted = new LinkedHashMap<>();
        unsorted.put("b", 1);
        unsorted.put("a", List.of(1, 2));
        assertEquals("{\"a\":[1,2],\"b\":1}", new PythonValues(null, List.of(",", ":"), true).write(unsorted));
        assertEquals("{\"b\": 1, \"a\": [1, 2]}", PythonValues.dumps(unsorted));
    }

    @Test
    void strOfValuesIsPythonsListAndScalarRepr() {
        List<Object> items = Arrays.asList("it's", "a\"b", "both'\"", "\n\t\u0000é\u200b😀", null, true, 1.5);
        assertEquals("[\"it's\", 'a\"b', 'both\\'\"', '\\n\\t\\x00é\\u200b😀', None, True, 1.5]",
                PythonValues.str(items));
        assertEquals("False", PythonValues.str(false));
        assertEquals("1e+20", PythonValues.str(1e20));
    }

    @Test
    void splitAndRsplitFollowPythonIncludingWhitespaceAndMaxsplit() {
        String s = "  a  b\u3000c\u00a0 ";
        assertEquals(List.of("a", "b", "c"), PythonStrings.split(s, null, -1));
        assertEquals(List.of("a", "b\u3000c\u00a0 "), PythonStrings.split(s, null, 1));
        assertEquals(List.of("  a  b", "c"), PythonStrings.rsplit(s, null, 1));
        assertEquals(List.of("a", "b", "", "c", ""), PythonStrings.split("a,b,,c,", ",", -1));
        assertEquals(List.of("a", "b", ",c,"), PythonStrings.split("a,b,,c,", ",", 2));
        assertEquals(List.of("a,b,", "c", ""), PythonStrings.rsplit("a,b,,c,", ",", 2));
        assertEquals(List.of("", ""), PythonStrings.split("x", "x", -1));
        assertThrows(IllegalArgumentException.class, () -> PythonStrings.split("x", "", -1));
    }

    @Test
    void otherStringMethodsFollowPython() {
        assertEquals(List.of("a", "b", "c", "d", "e", "f"),
                PythonStrings.invoke("a\r\nb\nc\rd\u001ce\u2028f", "splitlines", new Object[0]));
        assertEquals(List.of("a\r\n", "b\n"), PythonStrings.invoke("a\r\nb\n", "splitlines", new Object[] {true}));
        assertEquals("-a-b-😀-", PythonStrings.invoke("ab😀", "replace", new Object[] {"", "-"}));
        assertEquals("-a-b😀", PythonStrings.invoke("ab😀", "replace", new Object[] {"", "-", 2L}));
        assertEquals("bba", PythonStrings.invoke("aaa", "replace", new Object[] {"a", "b", 2L}));
        assertEquals(3L, PythonStrings.invoke("ab😀c", "find", new Object[] {"c"}));
        assertEquals(2L, PythonStrings.invoke("aaaa", "count", new Object[] {"aa"}));
        assertEquals(3L, PythonStrings.invoke("ab", "count", new Object[] {""}));
        assertEquals("think>x</think", PythonStrings.invoke("<think>x</think>", "strip", new Object[] {"<>"}));
        assertEquals("x", PythonStrings.invoke("  \t\nx \u2003", "strip", new Object[0]));
        assertEquals("hixx", PythonStrings.invoke("xxhixx", "lstrip", new Object[] {"x"}));
        assertEquals("They'Re Bill'S 3Rd", PythonStrings.invoke("they're bill's 3rd", "title", new Object[0]));
        assertEquals("Ss", PythonStrings.invoke("ß", "capitalize", new Object[0]));
        assertEquals(true, PythonStrings.invoke("a.md", "endswith", new Object[] {List.of(".txt", ".md")}));
        assertThrows(IllegalArgumentException.class, () -> PythonStrings.invoke("x", "format", new Object[0]));
    }

    @Test
    void slicesFollowPythonIncludingStepsNegativeIndicesAndCodePoints() {
        assertArrayEquals(new int[] {4, 3, 2, 1, 0}, PythonSyntax.indices(5, null, null, -1L));
        assertArrayEquals(new int[] {1, 3}, PythonSyntax.indices(5, 1L, null, 2L));
        assertArrayEquals(new int[] {3, 4}, PythonSyntax.indices(5, -2L, null, null));
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, PythonSyntax.indices(5, -99L, 99L, null));
        assertArrayEquals(new int[] {4, 2}, PythonSyntax.indices(5, 99L, 1L, -2L));
        assertArrayEquals(new int[0], PythonSyntax.indices(5, 3L, 1L, null));
        assertEquals("c😀ba", PythonSyntax.slice("ab😀c", null, null, -1L));
        assertEquals(List.of(3, 2), PythonSyntax.slice(List.of(1, 2, 3), null, -3L, -1L));
    }

    @Test
    void rewritesThreePartSlicesAndKeywordValuesOutsideStringLiterals() {
        assertEquals("#{messages[:tqserve_slice_step(none, -1)]}", PythonSyntax.rewrite("#{messages[::-1]}"));
        assertEquals("x[1:tqserve_slice_step(y[:tqserve_slice_step(none, 2)][0], none)]",
                PythonSyntax.rewrite("x[1:y[::2][0]:]"));
        assertEquals("'[::-1]' ~ a[1:2]", PythonSyntax.rewrite("'[::-1]' ~ a[1:2]"));
        assertEquals("namespace(a=(true), b=(messages|length - 1))",
                PythonSyntax.rewrite("namespace(a=true, b=messages|length - 1)"));
        assertEquals("f(x == 1, y=(g(z=('a=b'))))", PythonSyntax.rewrite("f(x == 1, y=g(z='a=b'))"));
    }
}
