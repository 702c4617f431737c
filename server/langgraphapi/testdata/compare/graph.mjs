// The graph LangGraph's own server runs in TestCompare, the same as the Go graph "compare" of
// compare_test.go: write asks a model about the topic, streaming its answer word by word, and
// emits the topic as a custom event (on the topic "hold" it first waits until the file
// $COMPARE_GATE exists); review asks "publish?" with an interrupt. And fanout, whose two nodes
// (drafter, reviewer) run in one superstep, each writing a field of its own.
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Annotation, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";

// Writer answers "once upon a <the last message's text>", streamed as the Go test's scripted
// model streams it: word by word, each word with the space after it.
class Writer extends BaseChatModel {
  _llmType() {
    return "writer";
  }
  answer(messages) {
    return "once upon a " + messages[messages.length - 1].content;
  }
  async _generate(messages) {
    const text = this.answer(messages);
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
  async *_streamResponseChunks(messages, _options, runManager) {
    for (const word of this.answer(messages).split(/(?<= )/)) {
      yield new ChatGenerationChunk({ text: word, message: new AIMessageChunk(word) });
      await runManager?.handleLLMNewToken(word);
    }
  }
}

const State = Annotation.Root({
  messages: Annotation({ reducer: (a, b) => (a ?? []).concat(b) }),
  topic: Annotation(),
});

const model = new Writer({});

export const graph = new StateGraph(State)
  .addNode("write", async (state, config) => {
    while (state.topic === "hold" && !existsSync(process.env.COMPARE_GATE)) await sleep(10);
    config.writer?.({ greeting: state.topic });
    const answer = await model.invoke([{ role: "user", content: state.topic }]);
    return { messages: [answer.content] };
  })
  .addNode("review", async () => {
    const answer = interrupt({ question: "publish?" });
    return { messages: ["review: " + answer] };
  })
  .addEdge(START, "write")
  .addEdge("write", "review")
  .addEdge("review", END)
  .compile();

const Fan = Annotation.Root({
  topic: Annotation(),
  draft: Annotation(),
  review: Annotation(),
});

export const fanout = new StateGraph(Fan)
  .addNode("drafter", async (state) => ({ draft: "a draft on " + state.topic }))
  .addNode("reviewer", async (state) => ({ review: "a review of " + state.topic }))
  .addEdge(START, "drafter")
  .addEdge(START, "reviewer")
  .addEdge("drafter", END)
  .addEdge("reviewer", END)
  .compile();
