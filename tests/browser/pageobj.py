"""What a user does on the page, as Playwright steps (shared by the browser tests)."""

from __future__ import annotations

import re


def expect(locator):
    """Playwright's `expect`, imported on use so that this module imports without playwright."""
    from playwright.sync_api import expect as _expect

    return _expect(locator)

TIMEOUT_MS = 30_000
K = 8  # results per round in the served app


def settle_layout(page) -> None:
    """See `AppPage.settle_layout`."""
    page.wait_for_function("() => document.getAnimations().every((a) => a.playState !== 'running')",
                           timeout=TIMEOUT_MS)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


class AppPage:
    def __init__(self, page, url: str):
        self.page = page
        self.url = url

    def open(self) -> AppPage:
        self.page.goto(self.url)
        self.page.wait_for_selector("#iir-desc textarea", timeout=TIMEOUT_MS)
        # the page's load events have run (they set the options and may run a shared search): no click races them
        self.page.wait_for_selector("body[data-iir-loaded]", state="attached", timeout=TIMEOUT_MS)
        return self

    # --- reading the page ------------------------------------------------------------------------
    @property
    def cards(self):
        """The round's results (not the images liked in the round before, kept first: `liked_ids`)."""
        return self.page.locator("#iir-results .iir-card:not(.is-liked)")

    def liked_ids(self) -> list[str]:
        """Ids of the images liked in the round before that "More like my marks" keeps first on the page."""
        return self.page.locator("#iir-results .iir-card.is-liked").evaluate_all("els => els.map(e => e.dataset.id)")

    def ids(self) -> list[str]:
        return self.cards.evaluate_all("els => els.map(e => e.dataset.id)")

    def seen_ids(self) -> list[str]:
        """Ids of the results that carry the Seen badge."""
        return self.page.locator("#iir-results .iir-card.is-seen").evaluate_all("els => els.map(e => e.dataset.id)")

    def alts(self) -> list[str]:
        return self.page.locator("#iir-results .iir-card img").evaluate_all("els => els.map(e => e.alt)")

    def status(self) -> str:
        return self.page.locator("#iir-status").inner_text()

    def dialogue(self) -> str:
        return self.page.locator("#iir-dialogue").inner_text()

    def button(self, i: int, action: str):
        return self.cards.nth(i).locator(f'button[data-action="{action}"]')

    def expect_round(self, n: int) -> None:
        expect(self.page.locator("#iir-results .iir-page-head")).to_contain_text(f"Round {n}:", timeout=TIMEOUT_MS)

    def expect_status(self, text: str | re.Pattern) -> None:
        expect(self.page.locator("#iir-status")).to_contain_text(text, timeout=TIMEOUT_MS)

    def expect_toast(self, text: str | re.Pattern) -> None:
        expect(self.page.locator(".toast-body").filter(has_text=text).first).to_be_visible(timeout=TIMEOUT_MS)

    def wait_idle(self) -> None:
        """No event of this tab is pending (Gradio shows a progress indicator while one is)."""
        self.page.wait_for_function("() => !document.querySelector('.progress-text, .eta-bar, .wrap.pending')",
                                    timeout=TIMEOUT_MS)

    def settled_ids(self) -> list[str]:
        """The round's result ids once the page has settled: the model's work done (quick results replaced by
        the refined ones), no event pending. Use it, not `ids()`, for results a later check compares with."""
        self.wait_model()
        self.wait_idle()
        expect(self.cards.first).to_be_attached(timeout=TIMEOUT_MS)
        return self.ids()

    def settle_layout(self) -> None:
        """No CSS transition or animation runs, and two frames have been drawn since: the boxes measured next
        are where they stay (instead of a fixed sleep)."""
        settle_layout(self.page)

    def wait_model(self) -> None:
        """The model work of the round on the page (refinement, question) is done."""
        self.page.wait_for_function(
            "() => !document.querySelector('#iir-dialogue .iir-asking, #iir-results .iir-quick')", timeout=TIMEOUT_MS)

    # --- doing things -----------------------------------------------------------------------------
    def search(self, text: str) -> None:
        box = self.page.locator("#iir-desc textarea")
        box.fill(text)
        box.press("Enter")

    def answer(self, text: str) -> None:
        box = self.page.locator("#iir-answer textarea")
        box.fill(text)
        box.press("Enter")

    def relative(self, text: str) -> None:
        box = self.page.locator("#iir-caption textarea")
        box.fill(text)
        box.press("Enter")

    def skip(self) -> None:
        self.page.locator("#iir-skip").click()

    def more_like_marks(self) -> None:
        self.page.locator("#iir-feedback").click()

    def new_search(self) -> None:
        """New search, and its empty page shown (a search typed before that lands would be cleared by it)."""
        self.page.locator("#iir-new").click()
        expect(self.page.locator("#iir-results .iir-card")).to_have_count(0, timeout=TIMEOUT_MS)

    def upload(self, path) -> None:
        self.page.locator("#iir-upload input[type=file]").set_input_files(str(path))
