// Command cc-connect lets a team drive Claude Code from chat. It reads the
// config, builds one adapter per [[platforms]] entry, and runs the engine
// until SIGINT or SIGTERM (or, for the terminal chat, the end of input).
// main only wires the process (arguments, standard streams, signals, exit
// code); the logic lives in cli.go and run.go where tests reach it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	hook := &interruptHook{}
	ctx, cancel := signalContext(context.Background(), sigs, os.Stderr, hook, func() {
		fmt.Fprintln(os.Stderr, "cc-connect: second signal, exiting now")
		os.Exit(exitInterrupted)
	})
	defer cancel()
	code := cli(ctx, os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Interrupt: hook})
	cancel()
	os.Exit(code)
}
