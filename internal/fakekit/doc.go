// Package fakekit is the machinery the fake platform servers (fakeslack,
// fakediscord, faketelegram) share, so that each keeps only its wire
// protocol and its platform's rules:
//
//   - Signal: change notification, and the waits built on it (a test waits
//     until what it expects is recorded, never a fixed time);
//   - Log: what a fake recorded in order (calls, acks, frames), read whole
//     or as a queue (Next);
//   - Store: the messages a fake keeps, by key, in posting order, each with
//     its version;
//   - Overrides and Holds: answers and delays a test puts ahead of a fake's
//     own;
//   - Bucket and Window: the two shapes of rate limit the platforms use;
//   - Seq: increasing ids; Answer: an HTTP answer of a fake.
//
// It is for tests only and knows no platform: numbers, error bodies and
// rules stay in each fake. It must not import a fake or anything of
// cc-connect's but internal/testenv.
package fakekit
