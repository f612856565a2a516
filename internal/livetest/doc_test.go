// Package livetest runs what a turn shows as it goes end to end: the
// engine with the real adapters against the platform fakes
// (internal/fakeslack, fakediscord, faketelegram), and the pinned claude
// CLI against the fake Messages API (internal/fakeapi). Claude's
// questions, plans, a slow streamed answer and a todo list, each judged by
// what the CLI did and what the chat shows.
package livetest
