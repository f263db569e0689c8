// The page's clickable HTML (gr.HTML js_on_load; `element` is the component's root and survives re-renders,
// so everything is bound once, by delegation):
// - a card or option button sends {action, id, index, question, round} to the server (`trigger("click", ...)`);
// - a card's picture opens the large view (lightbox) with the caption, previous/next and the card's actions;
// - an example description on the empty page runs that search;
// - a new round scrolls into view when it is off screen (a phone, after answering from the dialogue bar);
// - the keyboard moves through the results (`iirKeys`: arrows or j/k, Enter, r/n/f, ? for the list).
if (!element.dataset.iirBound) {
  element.dataset.iirBound = "1";
  const isResults = !!element.closest("#iir-results");
  if (isResults) window.iirResultsTrigger = trigger;
  if (isResults && !window.iirKeysBound) {
    window.iirKeysBound = true;
    document.addEventListener("keydown", iirKeys);
    // the card that holds the focus is remembered, so a re-render that replaces it gives the focus back
    document.addEventListener("focusin", (ev) => {
      const c = ev.target.closest && ev.target.closest("#iir-results .iir-card");
      window.iirKeyFocus = c ? c.dataset.id : "";
    });
  }

  element.addEventListener("click", (ev) => {
    const pick = ev.target.closest("button[data-select], button[data-selbar]");
    if (pick && element.contains(pick)) {
      ev.preventDefault();
      if (!pick.disabled) iirSelectClick(pick, ev.shiftKey);
      return;
    }
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
    iirSelectSync();
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
      iirSelectSync();
      iirKeepFocus();
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

// --- the keyboard on the results (issue 25, deliverable 7) -----------------------------------------------------
// Arrows (or j/k) move between the cards, a row at a time up and down; Enter (or Space) on a picture opens the
// large view, Escape closes it and the focus comes back to the card; r / n mark the card relevant / not it,
// f says Found it; ? opens the list of keys. Keys typed into a text box are left alone.
function iirTyping(el) {
  return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
}

function iirCardTarget(card) {
  return card.querySelector("button[data-action=open]") || card;
}

function iirFocusCard(card) {
  if (!card) return;
  const el = iirCardTarget(card);
  if (el === card) card.tabIndex = -1;
  el.focus();
  el.scrollIntoView({ block: "nearest" });
}

// how many cards a row of the grid holds (those level with the first)
function iirColumns(cards) {
  if (!cards.length) return 1;
  const top = cards[0].getBoundingClientRect().top;
  const n = cards.filter((c) => Math.abs(c.getBoundingClientRect().top - top) < 4).length;
  return Math.max(1, n);
}

const IIR_MOVES = { ArrowRight: 1, ArrowLeft: -1, j: 1, k: -1, ArrowDown: "row", ArrowUp: "-row" };
const IIR_ACTS = { r: "relevant", n: "irrelevant", f: "found" };

function iirKeys(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
  const lb = document.getElementById("iir-lightbox");
  const inView = lb && !lb.hidden;
  if (iirTyping(ev.target)) return;
  if (ev.key === "?") {
    if (inView) return;
    const help = document.querySelector("#iir-results .iir-keys");
    if (help) { ev.preventDefault(); help.open = !help.open; if (help.open) help.querySelector("summary").focus(); }
    return;
  }
  const cards = iirCards();
  if (!cards.length) return;
  const here = ev.target.closest ? ev.target.closest("#iir-results .iir-card") : null;
  const card = inView ? cards.find((c) => c.dataset.id === lb.dataset.id) : here;
  if (ev.key === "x" && card && !inView) {
    const b = card.querySelector("button[data-select]");
    if (b) { ev.preventDefault(); iirSelectClick(b, ev.shiftKey); }
    return;
  }
  if (IIR_ACTS[ev.key] && card) {
    const scope = inView ? lb.querySelector(".iir-lb-actions") : card;
    const b = scope && scope.querySelector(`button[data-action="${IIR_ACTS[ev.key]}"]`);
    if (b && !b.disabled) { ev.preventDefault(); b.click(); }
    return;
  }
  if (inView || !(ev.key in IIR_MOVES)) return;
  const onPage = ev.target === document.body || !!here;  // j/k from nowhere start at the first card
  if (!onPage || (!here && ev.key.startsWith("Arrow"))) return;
  ev.preventDefault();
  if (!here) return iirFocusCard(cards[0]);
  const i = cards.indexOf(here);
  const cols = iirColumns(cards);
  const d = IIR_MOVES[ev.key] === "row" ? cols : IIR_MOVES[ev.key] === "-row" ? -cols : IIR_MOVES[ev.key];
  iirFocusCard(cards[Math.min(cards.length - 1, Math.max(0, i + d))]);
}


// --- selecting results to act on them (issue 25, deliverable 5) ---------------------------------------------
// The selection lives in the page (a set of ids), is redrawn onto the cards after every render, and keeps only
// the results on the page. Shift-click selects every card from the last one clicked. The bar downloads the
// selection (hidden buttons #iir-sel-zip / #iir-sel-csv, which read `iirSelectedIds()`) or copies its links.
window.iirSelected = window.iirSelected || new Set();
window.iirSelectedIds = () => JSON.stringify(iirCards().filter((c) => !c.classList.contains("is-liked") &&
  window.iirSelected.has(c.dataset.id)).map((c) => c.dataset.id));

function iirSelectable() {
  return iirCards().filter((c) => c.querySelector("button[data-select]"));
}

function iirSelectClick(b, shift) {
  const sel = window.iirSelected;
  const what = b.dataset.selbar;
  const ids = iirSelectable().map((c) => c.dataset.id);
  if (b.dataset.select !== undefined) {
    const id = b.dataset.select;
    const last = ids.indexOf(window.iirSelectLast || "");
    const here = ids.indexOf(id);
    if (shift && last >= 0 && here >= 0) {
      const [a, z] = last < here ? [last, here] : [here, last];
      ids.slice(a, z + 1).forEach((i) => sel.add(i));
    } else if (sel.has(id)) sel.delete(id);
    else sel.add(id);
    window.iirSelectLast = id;
  } else if (what === "all") ids.forEach((i) => sel.add(i));
  else if (what === "clear") sel.clear();
  else if (what === "zip" || what === "csv") {
    const go = document.getElementById(`iir-sel-${what}`);
    if (go) go.click();
  } else if (what === "links") iirCopyLinks(b);
  iirSelectSync();
}

// the selected images' addresses (the large view's, one a line) to the clipboard
function iirCopyLinks(b) {
  const sel = window.iirSelected;
  const urls = iirSelectable().filter((c) => sel.has(c.dataset.id)).map((c) => {
    const open = c.querySelector("button[data-action=open]");
    return open ? new URL(open.dataset.src, location.href).href : "";
  }).filter(Boolean);
  const said = b.parentElement.querySelector(".iir-selsaid");
  const say = (t) => { if (said) { said.textContent = t; setTimeout(() => { said.textContent = ""; }, 4000); } };
  const text = urls.join("\n");
  const fallback = () => { window.prompt("Copy these links:", text); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => say(`${urls.length} link${urls.length === 1 ? "" : "s"} copied`),
                                             fallback);
  } else fallback();
}

// the selection onto the cards and the bar (after each render: the server redraws the cards)
function iirSelectSync() {
  const sel = window.iirSelected;
  const cards = iirSelectable();
  const head = document.querySelector("#iir-results .iir-page-head");
  if (!head || !cards.length) return;  // between two renders: nothing to sync, nothing to forget
  const key = head.dataset.round + "/" + head.dataset.epoch;
  if (window.iirSelectPage !== key) {  // a new page of results keeps only the selected images it shows
    window.iirSelectPage = key;
    const onPage = new Set(cards.map((c) => c.dataset.id));
    [...sel].forEach((i) => { if (!onPage.has(i)) sel.delete(i); });
  }
  for (const c of cards) {
    const on = sel.has(c.dataset.id);
    const b = c.querySelector("button[data-select]");
    if (b.getAttribute("aria-pressed") !== String(on)) b.setAttribute("aria-pressed", String(on));
    if (c.classList.contains("is-selected") !== on) c.classList.toggle("is-selected", on);
  }
  const bar = document.querySelector("#iir-results .iir-selbar");
  if (!bar) return;
  const n = [...sel].length;
  if (bar.classList.contains("has-sel") !== n > 0) bar.classList.toggle("has-sel", n > 0);
  const count = bar.querySelector(".iir-selcount");
  const text = n ? `${n} selected` : "Select results to download them or copy their links";
  if (count.textContent !== text) count.textContent = text;
  bar.querySelectorAll("button[data-selbar]").forEach((x) => {
    const off = x.dataset.selbar === "all" ? n === cards.length : n === 0;
    if (x.disabled !== off) x.disabled = off;
  });
}

// a re-render replaced the card that had the focus (it fell to the page's body): the same card gets it back
function iirKeepFocus() {
  const id = window.iirKeyFocus;
  const lb = document.getElementById("iir-lightbox");
  if (!id || (lb && !lb.hidden)) return;
  const a = document.activeElement;
  if (a && a !== document.body && document.contains(a)) return;
  const card = iirCards().find((c) => c.dataset.id === id);
  if (card) iirCardTarget(card).focus({ preventScroll: true });
}
