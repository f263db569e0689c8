() => {
  // The page's own behaviour outside its HTML components (demo.launch(js=...), run once on load):
  // after "Use as reference" on a result, the caption box comes into view and gets the focus, so the next
  // thing to do (say how your image differs) is where the eye and the keyboard are (issue 25).
  // The question bar's conversation scrolls to its foot when it changes: the question and its options in view.
  if (window.iirPageJs) return;
  window.iirPageJs = true;
  let wanted = 0;  // when "Use as reference" was clicked (0: not waiting)
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest('#iir-results button[data-action="reference"]');
    if (b && !b.disabled && b.getAttribute("aria-pressed") !== "true") wanted = Date.now();
  }, true);
  let lastDialogue = "";
  const toQuestion = () => {
    const d = document.querySelector("#iir-page #iir-dialogue .iir-dialogue");
    if (!d || !d.querySelector(".iir-question") || d.innerHTML === lastDialogue) return;
    lastDialogue = d.innerHTML;
    d.scrollTop = d.scrollHeight;
  };
  const chosen = () => document.querySelector("#iir-reference .iir-ref:not(.iir-ref-none)");
  // Share a search (issue 25): the address bar shows the search's link (`data-share` of #iir-share), so it
  // can be bookmarked; Copy link copies it. New search takes the query off the address again.
  let lastShare = null;
  const syncShare = () => {
    const el = document.querySelector("#iir-share [data-share]");
    if (!el) return;
    const q = el.getAttribute("data-share") || "";
    if (q === lastShare) return;
    const had = lastShare;
    lastShare = q;
    if (q) history.replaceState(history.state, "", location.pathname + q);
    else if (had) history.replaceState(history.state, "", location.pathname);
  };
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("#iir-copy-link");
    if (!b || b.disabled) return;
    const el = b.closest("[data-share]");
    const url = location.origin + location.pathname + ((el && el.getAttribute("data-share")) || "");
    const said = b.parentElement.querySelector(".iir-copied");
    const say = (text) => { if (said) { said.textContent = text; setTimeout(() => { said.textContent = ""; }, 4000); } };
    const fallback = () => { window.prompt("Copy this link:", url); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(url).then(() => say("Link copied"), fallback);
    } else fallback();
  });
  // the upload box shows "Upload a reference" (app.css): its name for a screen reader says the same words
  // first (Gradio names it "Click to upload or drop files"; axe-core: label-content-name-mismatch)
  const UPLOAD_NAME = "Upload a reference: click, or drop an image file here";
  const nameUpload = () => {
    const u = document.querySelector("#iir-upload .upload-container");
    if (u && u.getAttribute("aria-label") !== UPLOAD_NAME) u.setAttribute("aria-label", UPLOAD_NAME);
  };
  nameUpload();
  // The photo demo (ui/photos/note.py): the line under the results names the index this page was built over
  // (data-index). Once its note says the photos are ready, ask the server which index it serves (iir/served);
  // when that, or the line itself, names another index, the server has switched to the photos: reload, so
  // this tab never sends its events to the new page (a search in the address, ?q=..., runs again on them).
  let servedAtLoad = null;
  let switching = false;
  const watchSwitch = () => {
    const line = document.querySelector("#iir-gallery .iir-gallery[data-index]");
    if (!line) return;
    const now = line.getAttribute("data-index");
    if (servedAtLoad === null) servedAtLoad = now;
    if (now !== servedAtLoad) { window.location.reload(); return; }
    if (switching || !line.querySelector('[data-photos="ready"]')) return;
    switching = true;
    const ask = () => fetch("iir/served", { cache: "no-store" })
      .then((r) => (r.ok ? r.text() : servedAtLoad), () => servedAtLoad)
      .then((served) => { if (served && served !== servedAtLoad) window.location.reload(); else setTimeout(ask, 1000); });
    ask();
  };
  watchSwitch();
  new MutationObserver(() => {
    nameUpload();
    watchSwitch();
    toQuestion();
    syncShare();
    if (!wanted) return;
    if (Date.now() - wanted > 10000) { wanted = 0; return; }
    const box = document.querySelector("#iir-caption textarea");
    if (!box || !chosen() || document.body.classList.contains("iir-lb-open")) return;
    wanted = 0;
    box.scrollIntoView({ block: "center" });
    box.focus({ preventScroll: true });
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
}
