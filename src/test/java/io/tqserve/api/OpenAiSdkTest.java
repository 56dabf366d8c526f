package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The official OpenAI Java SDK against the running server: streaming and not, stop sequences, usage. */
class OpenAiSdkTest extends ServingTestContext {
    static final String MODEL = "tiny-llama-h128";
    static final String PROMPT = "The ls command";
    static final String CHAT_TEXT = "What does the ls command do?";

    OpenAIClient sdk;

    @BeforeEach
    void sdk() {
        sdk = OpenAIOkHttpClient.builder().baseUrl(baseUrl() + "/v1").apiKey("unused").maxRetries(0).build();
    }

    int promptTokens(String tokenizeBody) throws Exception {
        String body = post("/tokenize", tokenizeBody).body();
        return Integer.parseInt(body.replaceAll(".*\"count\":(\\d+).*", "$1"));
    }

    CompletionCreateParams.Builder completion(long maxTokens) {
        return CompletionCreateParams.builder().model(MODEL).prompt(PROMPT).maxTokens(maxTokens).temperature(0.0)
                .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched"));
    }

    ChatCompletionCreateParams.Builder chat(long maxTokens) {
        assumeChatTemplate();
        return ChatCompletionCreateParams.builder().model(MODEL).addUserMessage(CHAT_TEXT)
                .maxCompletionTokens(maxTokens).temperature(0.0)
                .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched"));
    }

    /** The placeholder tokenizer classes load no chat template; the tokenizer branch brings the real one. */
    void assumeChatTemplate() {
        Assumptions.assumeTrue(runtime.loaded().orElseThrow().model().chatTemplate() != null,
                "the served model's chat template is not loaded (placeholder ChatTemplate)");
    }

    record Streamed(String text, List<String> finishReasons, Optional<CompletionUsage> usage, int chunks) {
    }

    Streamed streamCompletion(CompletionCreateParams params) {
        StringBuilder text = new StringBuilder();
        List<String> reasons = new ArrayList<>();
        CompletionUsage[] usage = {null};
        int[] chunks = {0};
        try (StreamResponse<Completion> s = sdk.completions().createStreaming(params)) {
            s.stream().forEach(c -> {
                chunks[0]++;
                for (CompletionChoice ch : c.choices()) {
                    text.append(ch.text());
                    ch._finishReason().asKnown().ifPresent(r -> reasons.add(r.asString()));
                }
                c.usage().ifPresent(u -> usage[0] = u);
            });
        }
        return new Streamed(text.toString(), reasons, Optional.ofNullable(usage[0]), chunks[0]);
    }

    Streamed streamChat(ChatCompletionCreateParams params) {
        StringBuilder text = new StringBuilder();
        List<String> reasons = new ArrayList<>();
        CompletionUsage[] usage = {null};
        int[] chunks = {0};
        try (StreamResponse<ChatCompletionChunk> s = sdk.chat().completions().createStreaming(params)) {
            s.stream().forEach(c -> {
                chunks[0]++;
                for (ChatCompletionChunk.Choice ch : c.choices()) {
                    ch.delta().content().ifPresent(text::append);
                    ch.finishReason().ifPresent(r -> reasons.add(r.asString()));
                }
                c.usage().ifPresent(u -> usage[0] = u);
            });
        }
        return new Streamed(text.toString(), reasons, Optional.ofNullable(usage[0]), chunks[0]);
    }

    @Test
    void streamingCompletionEndsWithLengthAndCountsRealTokens() throws Exception {
        Streamed s = streamCompletion(completion(12).streamOptions(
                ChatCompletionStreamOptions.builder().includeUsage(true).build()).build());
        assertThat(s.text()).isNotBlank();
        assertThat(s.finishReasons()).containsExactly("length");
        CompletionUsage u = s.usage().orElseThrow();
        assertThat(u.promptTokens()).isEqualTo(promptTokens("{\"prompt\":\"" + PROMPT + "\"}")).isEqualTo(3);
        assertThat(u.completionTokens()).isEqualTo(12);
        assertThat(u.totalTokens()).isEqualTo(15);
    }

    @Test
    void nonStreamingCompletionMatchesTheStreamedText() {
        Completion c = sdk.completions().create(completion(12).build());
        Streamed s = streamCompletion(completion(12).build());
        assertThat(c.choices()).hasSize(1);
        assertThat(c.choices().get(0).text()).isEqualTo(s.text());
        assertThat(c.choices().get(0).finishReason()).isEqualTo(CompletionChoice.FinishReason.LENGTH);
        CompletionUsage u = c.usage().orElseThrow();
        assertThat(u.promptTokens()).isEqualTo(3);
        assertThat(u.completionTokens()).isEqualTo(12);
        assertThat(u.totalTokens()).isEqualTo(15);
        assertThat(s.usage()).as("no usage chunk unless stream_options.include_usage").isEmpty();
    }

    @Test
    void streamingChatEndsWithLengthAndCountsRealTokens() throws Exception {
        Streamed s = streamChat(chat(10).streamOptions(
                ChatCompletionStreamOptions.builder().includeUsage(true).build()).build());
        assertThat(s.text()).isNotBlank();
        assertThat(s.finishReasons()).containsExactly("length");
        CompletionUsage u = s.usage().orElseThrow();
        int expectedPrompt = promptTokens("{\"messages\":[{\"role\":\"user\",\"content\":\"" + CHAT_TEXT + "\"}]}");
        assertThat(u.promptTokens()).isEqualTo(expectedPrompt);
        assertThat(u.completionTokens()).isEqualTo(10);
        assertThat(u.totalTokens()).isEqualTo(expectedPrompt + 10);
    }

    @Test
    void nonStreamingChatMatchesTheStreamedText() {
        ChatCompletion c = sdk.chat().completions().create(chat(10).build());
        Streamed s = streamChat(chat(10).build());
        ChatCompletion.Choice choice = c.choices().get(0);
        assertThat(choice.message().content()).contains(s.text());
        assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.LENGTH);
        assertThat(c.usage().orElseThrow().completionTokens()).isEqualTo(10);
    }

    /**
     * A stop string made of the end of one generated token and the start of the next is never emitted, nor
     * anything after it, streamed or not.
     */
    @Test
    void stopSequenceSplitAcrossTokensIsNeverEmitted() {
        Completion probe = sdk.completions().create(completion(24).logprobs(0L).build());
        List<String> tokens = probe.choices().get(0).logprobs().orElseThrow().tokens().orElseThrow();
        String full = probe.choices().get(0).text();
        String stop = null;
        for (int i = 2; i + 1 < tokens.size() && stop == null; i++) {
            String a = tokens.get(i);
            String b = tokens.get(i + 1);
            if (a.strip().length() >= 2 && b.strip().length() >= 2 && a.chars().allMatch(ch -> ch < 128)
                    && b.chars().allMatch(ch -> ch < 128)) {
                stop = a.substring(a.length() - 2) + b.substring(0, 2);
            }
        }
        assertThat(stop).as("a token boundary inside the greedy text of " + tokens).isNotNull();
        String expected = full.substring(0, full.indexOf(stop));

        Completion stopped = sdk.completions().create(completion(24).stop(stop).build());
        assertThat(stopped.choices().get(0).text()).isEqualTo(expected).doesNotContain(stop);
        assertThat(stopped.choices().get(0).finishReason()).isEqualTo(CompletionChoice.FinishReason.STOP);

        Streamed s = streamCompletion(completion(24).stop(stop).build());
        assertThat(s.text()).isEqualTo(expected).doesNotContain(stop);
        assertThat(s.finishReasons()).containsExactly("stop");
    }
}
