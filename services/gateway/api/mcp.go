package api

// PathMCP is the gateway's Model Context Protocol endpoint (streamable HTTP,
// stateless: POST only), behind the same bearer authentication as /api.
// docs/mcp.md describes its tools.
const PathMCP = "/mcp"
