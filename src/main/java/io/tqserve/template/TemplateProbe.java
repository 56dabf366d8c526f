package io.tqserve.template;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The load-time check of a compiled template: renders probe conversations (with and without a system prompt,
 * with and without the generation prompt). Nothing it finds refuses the template, because Python's transformers
 * loads any template that compiles: a template that drops a message (e.g. one without a system role) or fails on
 * a probe (one that needs extra variables, or refuses a role through {@code raise_exception}) is accepted with a
 * warning logged at load, naming the message or the error and its template line.
 */
final class TemplateProbe {
    private static final String SYSTEM = "Probe system prompt 7f3a.";
    private static final String USER = "Probe user question 9c1e?";
    private static final String ASSISTANT = "Probe assistant answer 2b8d.";
    private static final String FOLLOW_UP = "Probe follow-up 5e0f!";

    private TemplateProbe() {
    }

    static List<String> check(ChatTemplate template) {
        List<List<Map<String, Object>>> probes = List.of(
                ChatTemplate.messages("system", SYSTEM, "user", USER, "assistant", ASSISTANT, "user", FOLLOW_UP),
                ChatTemplate.messages("user", USER, "assistant", ASSISTANT, "user", FOLLOW_UP),
                ChatTemplate.messages("user", USER));
        List<String> warnings = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        int rendered = 0;
        for (List<Map<String, Object>> probe : probes) {
            for (boolean generationPrompt : new boolean[] {true, false}) {
                String text;
                try {
                    text = template.render(probe, generationPrompt);
                } catch (TemplateException e) {
                    failures.add(e.getMessage());
                    continue;
                }
                rendered++;
                for (Map<String, Object> m : probe) {
                    String content = (String) m.get("content");
                    if (!text.contains(content)) {
                        String w = "chat template drops the " + m.get("role") + " message of a probe conversation;"
                                + " it is rendered as Python's Jinja2 renders it";
                        if (!warnings.contains(w)) {
                            warnings.add(w);
                        }
                    }
                }
            }
        }
        String prefix = rendered == 0 ? "chat template renders no probe conversation: "
                : "chat template fails on a probe conversation: ";
        failures.stream().distinct().forEach(f -> warnings.add(prefix + f));
        return warnings;
    }
}
