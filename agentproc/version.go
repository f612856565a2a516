package agentproc

// TestedClaudeVersion is the Claude Code CLI release cc-connect is built and
// tested against (the integration tier pins the same one). Other versions
// may work, but the stream-json protocol is not a stable interface, so
// `cc-connect doctor` warns when the installed CLI differs.
const TestedClaudeVersion = "2.1.332"
