// Package modeltest replays a model vendor's wire format over real HTTP.
//
// It is not a mock of Sonde's code: the vendor's own SDK talks to a Server
// (NewOpenAI, NewAnthropic, NewGemini, NewOllama) exactly as it talks to the
// vendor, over a loopback socket, and
// reads the same bytes the vendor would send — the same JSON bodies, the same
// server-sent-event chunks, the same error envelopes. What the "model" says is
// decided by a Script from the decoded request, so a script can follow the
// conversation (how many assistant turns so far, what the tools answered) and
// reply as a model would.
//
// Every vendor's request is decoded into one vendor-neutral ChatRequest and
// answered from one Reply, so the same Script drives any vendor.
//
// Tests use it to exercise each vendor's SDK end to end; the demo provider
// (LLM_PROVIDER=demo, see package demoscript) uses it at run time, which is why
// this package must never import "testing".
package modeltest
