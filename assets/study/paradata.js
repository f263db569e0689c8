// Paradata (gr.HTML js_on_load on a hidden box): the page's focus, visibility and idle changes, each with the
// browser's time, sent to the server in small batches as {events: [{kind, at}]} (kind: blur, focus, hidden,
// visible, idle, active). The server logs them and sets the browser's clock against its own.
if (!element.dataset.iirParadata) {
  element.dataset.iirParadata = "1";
  const IDLE_MS = parseFloat(element.querySelector("[data-idle-s]")?.dataset.idleS || "30") * 1000;
  let queue = [], last = Date.now(), idle = false, timer = null;
  const note = (kind, at) => {
    queue.push({ kind: kind, at: (at || Date.now()) / 1000 });
    if (!timer) timer = setTimeout(flush, 300);
  };
  const flush = () => {
    timer = null;
    if (!queue.length) return;
    const batch = queue.splice(0, 50);
    trigger("click", { action: "paradata", events: batch });
  };
  window.addEventListener("blur", () => note("blur"));
  window.addEventListener("focus", () => note("focus"));
  document.addEventListener("visibilitychange", () => {
    note(document.visibilityState === "hidden" ? "hidden" : "visible");
    if (document.visibilityState === "hidden") flush();
  });
  const active = () => {
    last = Date.now();
    if (idle) { idle = false; note("active"); }
  };
  for (const ev of ["pointerdown", "pointermove", "keydown", "wheel", "scroll", "touchstart"]) {
    window.addEventListener(ev, active, { passive: true, capture: true });
  }
  setInterval(() => {
    if (!idle && Date.now() - last >= IDLE_MS) { idle = true; note("idle", last); }
  }, 1000);
}
