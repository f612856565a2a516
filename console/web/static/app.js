// The live view: a conversation's events over SSE. Every text goes in
// with textContent, never as HTML. Answers, !stop and Revert are plain
// forms.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var key = live.getAttribute("data-key");
  var reply = document.getElementById("reply");
  var tools = document.getElementById("tools");
  var todos = document.getElementById("todos");
  var asks = document.getElementById("asks");
  var state = document.getElementById("state");
  var es = new EventSource("/events?k=" + encodeURIComponent(key));

  function data(e) { return JSON.parse(e.data); }
  function item(text, cls) {
    var li = document.createElement("li");
    li.textContent = text;
    if (cls) { li.className = cls; }
    return li;
  }
  function shownAsks() {
    var ids = [];
    asks.querySelectorAll("[data-request]").forEach(function (li) { ids.push(li.getAttribute("data-request")); });
    return ids.sort().join(" ");
  }
  function setTodos(list) {
    todos.replaceChildren();
    (list || []).forEach(function (t) { todos.appendChild(item(t.text + " (" + t.status + ")", "todo-" + t.status)); });
  }
  // The page rendered what waited when it was made; a request asked or
  // answered since comes with its forms by loading the page again.
  function reload() { es.close(); window.location.reload(); }

  es.addEventListener("snapshot", function (e) {
    var d = data(e);
    if ((d.asks || []).slice().sort().join(" ") !== shownAsks()) { reload(); return; }
    reply.textContent = d.text || "";
    tools.replaceChildren();
    (d.tools || []).forEach(function (t) { tools.appendChild(item(t)); });
    setTodos(d.todos);
  });
  es.addEventListener("started", function () {
    reply.textContent = ""; tools.replaceChildren(); setTodos([]); state.textContent = "running";
  });
  es.addEventListener("text", function (e) { reply.textContent = data(e).text || ""; });
  es.addEventListener("tool", function (e) { tools.appendChild(item(data(e).input || "")); });
  es.addEventListener("todos", function (e) { setTodos(data(e).todos); });
  es.addEventListener("asking", reload);
  es.addEventListener("answered", reload);
  // A revert (or its refusal) changes what the page says of the last
  // turn's changes.
  es.addEventListener("reverted", reload);
  es.addEventListener("finished", function (e) {
    var d = data(e);
    if (d.text) { reply.textContent = d.text; }
    state.textContent = "idle (" + (d.outcome || "done") + ")";
    live.setAttribute("data-finished", d.outcome || "done");
  });
  es.addEventListener("resync", reload);
  // A form sent leaves the page: an event now must not reload it over
  // the answer (a Revert's outcome comes as a "reverted" event while its
  // POST waits for it).
  document.addEventListener("submit", function () { es.close(); });
  es.addEventListener("gone", function () { es.close(); window.location.assign("/"); });
})();
