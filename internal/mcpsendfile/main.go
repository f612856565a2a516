// Command mcpsendfile is a stdio MCP server with one tool, send_file, for
// the real-CLI tests: it is what cc-connect would hand claude with
// --mcp-config to let the agent post a file into the chat. Each call, and
// the server's start and end, is appended as a JSON line to the file named
// by MCP_SENDFILE_LOG, so a test can assert that a call reached the server
// and how long the server lived. It is a test program and owns nothing
// else.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SendFileArgs is the input of send_file.
type SendFileArgs struct {
	Path    string `json:"path" jsonschema:"path of the file to send"`
	Comment string `json:"comment,omitempty" jsonschema:"optional text posted with the file"`
}

// journal appends events to MCP_SENDFILE_LOG.
type journal struct {
	mu   sync.Mutex
	path string
}

func (j *journal) add(v map[string]any) {
	if j.path == "" {
		return
	}
	v["pid"] = os.Getpid()
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Printf("mcpsendfile: opening the log: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		log.Printf("mcpsendfile: writing the log: %v", err)
	}
}

func main() {
	j := &journal{path: os.Getenv("MCP_SENDFILE_LOG")}
	j.add(map[string]any{"event": "start", "args": os.Args[1:]})
	server := mcp.NewServer(&mcp.Implementation{Name: "cc-connect", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "send_file", Description: "Send a file from the workspace to the chat."},
		func(ctx context.Context, req *mcp.CallToolRequest, args SendFileArgs) (*mcp.CallToolResult, any, error) {
			j.add(map[string]any{"event": "call", "path": args.Path, "comment": args.Comment})
			if args.Path == "" {
				return &mcp.CallToolResult{IsError: true,
					Content: []mcp.Content{&mcp.TextContent{Text: "path is required"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: fmt.Sprintf("sent %s to the chat", args.Path)}}}, nil, nil
		})
	err := server.Run(context.Background(), &mcp.StdioTransport{})
	j.add(map[string]any{"event": "exit", "error": fmt.Sprint(err)})
	if err != nil {
		log.Printf("mcpsendfile: %v", err)
		os.Exit(1)
	}
}
