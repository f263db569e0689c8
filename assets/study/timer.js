// Task timer (gr.HTML js_on_load on the budget box): counts down the `.iir-timer` the server renders
// (data-left = seconds left when rendered, data-key changes with every render) and, at 0, reports
// {action: "timeout"} once; the server checks the time itself and ends the task as "timeout".
if (!element.dataset.iirTimer) {
  element.dataset.iirTimer = "1";
  let key = null, deadline = 0, fired = null;
  setInterval(() => {
    const t = element.querySelector(".iir-timer");
    if (!t) { key = null; return; }
    if (t.dataset.key !== key) {
      key = t.dataset.key;
      deadline = Date.now() + parseFloat(t.dataset.left) * 1000;
    }
    const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    const clock = t.querySelector(".iir-clock");
    if (clock) clock.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
    t.classList.toggle("is-low", left <= 30);
    if (left <= 0 && fired !== key) {
      fired = key;
      trigger("click", { action: "timeout", id: "" });
    }
  }, 500);
}
