// Sign in with an API token: the API sets a session cookie; pages then use it with a CSRF header.
import { bodyOf, reach } from "./lib.js";

const form = document.getElementById("sign-in-form");
const error = document.getElementById("token-error");
const input = document.getElementById("token");

async function signIn(token) {
  const res = await reach("/v1/auth/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  });
  return { res, body: res.ok ? null : (await bodyOf(res)) || {} };
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.textContent = "";
  input.removeAttribute("aria-invalid");
  let message;
  try {
    const { res, body } = await signIn(input.value.trim());
    if (res.ok) {
      location.assign(form.dataset.next || "/ui/types");
      return;
    }
    message = res.status === 422 ? "Paste a token first." : body.message || `Sign-in failed (HTTP ${res.status}).`;
  } catch (err) {
    message = `Not signed in. ${err.message}`;
  }
  error.textContent = message;
  input.setAttribute("aria-invalid", "true");
  input.focus();
});
