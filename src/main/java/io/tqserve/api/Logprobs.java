package io.tqserve.api;

import io.tqserve.api.openai.ChatLogprobs;
import io.tqserve.api.openai.CompletionLogprobs;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.model.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Converts the engine's per-token logprobs into the two OpenAI shapes (chat and legacy completions). */
final class Logprobs {
    private Logprobs() {
    }

    static ChatLogprobs.TokenLogprob chat(GenerationEvent.Token t, Tokenizer tokenizer) {
        String token = tokenizer.decode(new int[] {t.tokenId()});
        List<ChatLogprobs.TopLogprob> top = new ArrayList<>(t.top().size());
        for (GenerationEvent.TopLogprob alt : t.top()) {
            top.add(new ChatLogprobs.TopLogprob(alt.text(), alt.logprob(), bytes(alt.text())));
        }
        return new ChatLogprobs.TokenLogprob(token, t.logprob(), bytes(token), top);
    }

    /** One token's legacy entry, appended to parallel lists. */
    static void completion(GenerationEvent.Token t, Tokenizer tokenizer, int textOffset, List<String> tokens,
            List<Double> logprobs, List<Map<String, Double>> tops, List<Integer> offsets) {
        tokens.add(tokenizer.decode(new int[] {t.tokenId()}));
        logprobs.add((double) t.logprob());
        Map<String, Double> top = new LinkedHashMap<>();
        for (GenerationEvent.TopLogprob alt : t.top()) {
            top.putIfAbsent(alt.text(), (double) alt.logprob());
        }
        tops.add(top);
        offsets.add(textOffset);
    }

    static CompletionLogprobs completionOne(GenerationEvent.Token t, Tokenizer tokenizer, int textOffset) {
        List<String> tokens = new ArrayList<>(1);
        List<Double> lps = new ArrayList<>(1);
        List<Map<String, Double>> tops = new ArrayList<>(1);
        List<Integer> offsets = new ArrayList<>(1);
        completion(t, tokenizer, textOffset, tokens, lps, tops, offsets);
        return new CompletionLogprobs(tokens, lps, tops, offsets);
    }

    static List<Integer> bytes(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        List<Integer> out = new ArrayList<>(b.length);
        for (byte x : b) {
            out.add(x & 0xff);
        }
        return out;
    }
}
