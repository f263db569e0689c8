// The page's clickable HTML (gr.HTML js_on_load; `element` is the component's root and survives re-renders,
// so everything is bound once, by delegation):
// - a card or option button sends {action, id, index, question, round} to the server (`trigger("click", ...)`);
// - a card's picture opens the large view (lightbox) with the caption, previous/next and the card's actions;
// - an example description on the empty page runs that search;
// - a new round scrolls into view when it is off screen (a phone, after answering from the dialogue bar).
if (!element.dataset.iirBound) {
  element.dataset.iirBound = "1";
  const isResults = !!element.closest("#iir-results");
  if (isResults) window.iirResultsTrigger = trigger;

  element.addEventListener("click", (ev) => {
    const ex = ev.target.closest("button[data-example]");
    if (ex && element.contains(ex)) {
      ev.preventDefault();
      iirSearch(ex.dataset.example);
      return;
    }
    const b = ev.target.closest("button[data-action]");
    if (!b || b.disabled || !element.contains(b)) return;
    ev.preventDefault();
    if (b.dataset.action === "open") {
      iirOpen(b.dataset.id);
      return;
    }
    if (b.dataset.action === "unfold") {  // "+N similar": show or hide the near-duplicates folded under a card
      const open = b.getAttribute("aria-expanded") !== "true";
      window.iirUnfolded = window.iirUnfolded || new Set();
      if (open) window.iirUnfolded.add(b.dataset.id); else window.iirUnfolded.delete(b.dataset.id);
      iirApplyFolds(element);
      return;
    }
    trigger("click", { action: b.dataset.action, id: b.dataset.id || "", index: b.dataset.index || "",
                       question: b.dataset.question || "", round: b.dataset.round || "" });
  });

  if (isResults) {
    let lastHead = "";
    new MutationObserver(() => {
      const head = element.querySelector(".iir-page-head");
      const key = head ? head.dataset.round + "/" + head.dataset.epoch : "";
      if (key && key !== lastHead) {
        const r = head.getBoundingClientRect();
        if (lastHead && (r.top < 0 || r.top > window.innerHeight - 80)) head.scrollIntoView({ block: "start" });
        lastHead = key;
      }
      iirApplyFolds(element);  // a re-render (a mark) keeps the groups the person opened
      if (window.iirLightboxSync) window.iirLightboxSync();
    }).observe(element, { childList: true, subtree: true, attributes: true, characterData: true });
    // (Gradio may update the cards in place, changing only attributes such as aria-pressed)
  }
}

function iirApplyFolds(root) {
  const open = window.iirUnfolded || new Set();
  root.querySelectorAll(".iir-more-similar").forEach((b) => {
    const want = open.has(b.dataset.id) ? "true" : "false";
    if (b.getAttribute("aria-expanded") !== want) b.setAttribute("aria-expanded", want);
  });
  root.querySelectorAll(".iir-card[data-fold]").forEach((c) => {
    const hide = !open.has(c.dataset.fold);
    if (c.hidden !== hide) c.hidden = hide;
  });
}

function iirSearch(text) {
  const box = document.querySelector("#iir-desc textarea");
  if (!box) return;
  box.value = text;
  box.dispatchEvent(new Event("input", { bubbles: true }));
  box.focus();
  setTimeout(() => {  // the box's own Search button submits what the input event stored
    const go = document.querySelector("#iir-desc button.submit-button, #iir-desc button");
    if (go) go.click();
  }, 50);
}

function iirCards() {
  return [...document.querySelectorAll("#iir-results .iir-card")];
}

function iirOpen(id) {
  let box = document.getElementById("iir-lightbox");
  if (!box) {
    box = document.createElement("div");
    box.id = "iir-lightbox";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.setAttribute("aria-label", "Larger view");
    box.innerHTML = '<div class="iir-lb-inner">' +
      '<button type="button" class="iir-lb-close" aria-label="Close (Esc)" title="Close (Esc)">✕</button>' +
      '<button type="button" class="iir-lb-prev" aria-label="Previous result" title="Previous (←)">‹</button>' +
      '<figure class="iir-lb-fig"><img class="iir-lb-img" alt=""><div class="iir-lb-missing" hidden></div>' +
      '<figcaption class="iir-lb-cap"></figcaption></figure>' +
      '<button type="button" class="iir-lb-next" aria-label="Next result" title="Next (→)">›</button>' +
      '<div class="iir-lb-actions"></div></div>';
    document.body.appendChild(box);
    box.addEventListener("click", (ev) => {
      if (ev.target === box || ev.target.closest(".iir-lb-close")) return iirClose();
      if (ev.target.closest(".iir-lb-prev")) return iirStep(-1);
      if (ev.target.closest(".iir-lb-next")) return iirStep(1);
      const b = ev.target.closest("button[data-action]");
      if (b && !b.disabled && window.iirResultsTrigger) {
        window.iirResultsTrigger("click", { action: b.dataset.action, id: b.dataset.id, index: "", question: "" });
        if (b.dataset.action === "found" || b.dataset.action === "like") iirClose();
      }
    });
    box.querySelector(".iir-lb-img").addEventListener("error", () => {
      box.querySelector(".iir-lb-img").hidden = true;
      const miss = box.querySelector(".iir-lb-missing");
      miss.hidden = false;
      miss.textContent = "This image cannot be shown any more (it may have been removed from the collection).";
    });
    document.addEventListener("keydown", (ev) => {
      if (box.hidden) return;
      if (ev.key === "Escape") { ev.preventDefault(); iirClose(); }
      else if (ev.key === "ArrowLeft") iirStep(-1);
      else if (ev.key === "ArrowRight") iirStep(1);
      else if (ev.key === "Tab") iirTrapTab(box, ev);
    });
    // focus that leaves the open view (a click outside, a script) comes back to it
    document.addEventListener("focusin", (ev) => {
      if (!box.hidden && !box.contains(ev.target)) iirFocusIn(box);
    });
    // the page re-renders the cards after each action: the open view follows (pressed states, a new round);
    // only what changed is redrawn, so a button being pressed or holding the focus stays where it is
    window.iirLightboxSync = () => { if (!box.hidden) iirShow(box.dataset.id, true); };
  }
  box.dataset.returnFocus = id;
  box.hidden = false;
  document.body.classList.add("iir-lb-open");
  iirShow(id, false);
  iirFocusIn(box);
}

function iirFocusable(box) {
  return [...box.querySelectorAll("button:not([disabled]), [href], [tabindex]:not([tabindex='-1'])")]
    .filter((el) => !el.hidden && el.offsetParent !== null);
}

function iirFocusIn(box) {
  const first = box.querySelector(".iir-lb-close") || iirFocusable(box)[0];
  if (first) first.focus();
}

// Tab and Shift+Tab go round the buttons of the open view, never to the page behind it
function iirTrapTab(box, ev) {
  const els = iirFocusable(box);
  if (!els.length) return;
  const i = els.indexOf(document.activeElement);
  ev.preventDefault();
  const next = i < 0 ? (ev.shiftKey ? els.length - 1 : 0) : (i + (ev.shiftKey ? -1 : 1) + els.length) % els.length;
  els[next].focus();
}

// The card's actions in the open view: the same buttons are kept and only their state (pressed, disabled,
// label) follows the card's; they are replaced only when the set of actions changes (e.g. the search ended).
function iirSyncActions(acts, src) {
  const html = src ? src.outerHTML : "";
  if (acts.dataset.html === html) return;
  const want = src ? src.cloneNode(true) : null;
  const have = acts.firstElementChild;
  const key = (el) => el ? el.className + "|" +
    [...el.querySelectorAll("button[data-action]")].map((b) => b.dataset.action + ":" + b.dataset.id).join(",") : "";
  if (want && have && key(want) === key(have)) {
    const now = [...have.querySelectorAll("button[data-action]")];
    [...want.querySelectorAll("button[data-action]")].forEach((b, n) => {
      const old = now[n];
      for (const attr of ["aria-pressed", "title", "class"]) {
        const v = b.getAttribute(attr);
        if (v === null) old.removeAttribute(attr); else if (old.getAttribute(attr) !== v) old.setAttribute(attr, v);
      }
      old.disabled = b.disabled;
      if (old.textContent !== b.textContent) old.textContent = b.textContent;
    });
  } else {
    const focused = acts.contains(document.activeElement) ? document.activeElement.dataset.action : "";
    acts.replaceChildren(...(want ? [want] : []));
    const again = focused && acts.querySelector(`button[data-action="${focused}"]`);
    if (again) again.focus();
    else if (focused) iirFocusIn(document.getElementById("iir-lightbox"));
  }
  acts.dataset.html = html;
}

function iirShow(id, sync) {
  const box = document.getElementById("iir-lightbox");
  const card = iirCards().find((c) => c.dataset.id === id);
  const img = box.querySelector(".iir-lb-img");
  const miss = box.querySelector(".iir-lb-missing");
  const acts = box.querySelector(".iir-lb-actions");
  box.dataset.id = id;
  if (!card) {  // a newer round replaced the page
    img.hidden = true;
    miss.hidden = false;
    miss.textContent = "This image is no longer on the page: a newer round replaced the results.";
    box.querySelector(".iir-lb-cap").textContent = "";
    iirSyncActions(acts, null);
    return;
  }
  const open = card.querySelector("button[data-action=open]");
  if (!sync || img.getAttribute("src") !== open.dataset.src) {
    img.hidden = false;
    miss.hidden = true;
    img.src = open.dataset.src;
  }
  const alt = card.querySelector(".iir-cap").textContent;
  if (img.alt !== alt) img.alt = alt;
  const cards = iirCards();
  const where = card.dataset.rank ? `#${card.dataset.rank} of ${cards.length} · ` : "You liked this · ";
  const cap = where + alt + (card.classList.contains("is-seen") ? " · seen in an earlier round" : "");
  const capEl = box.querySelector(".iir-lb-cap");
  if (capEl.textContent !== cap) capEl.textContent = cap;
  iirSyncActions(acts, card.querySelector(".iir-actions, .iir-found-badge"));
}

function iirStep(d) {
  const box = document.getElementById("iir-lightbox");
  const cards = iirCards();
  if (!cards.length) return;
  let i = cards.findIndex((c) => c.dataset.id === box.dataset.id);
  i = i < 0 ? 0 : (i + d + cards.length) % cards.length;
  iirShow(cards[i].dataset.id, false);
}

function iirClose() {
  const box = document.getElementById("iir-lightbox");
  if (!box) return;
  box.hidden = true;
  document.body.classList.remove("iir-lb-open");
  const back = iirCards().find((c) => c.dataset.id === box.dataset.id);
  const btn = back && back.querySelector("button[data-action=open]");
  if (btn) btn.focus();
}
