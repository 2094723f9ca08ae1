// What each tab of the dashboard is: a frame built once, and an update run on every refresh.

export interface Page {
  readonly title: string;
  /** Builds the page's frame (headings, inputs) into `root`. */
  mount(root: HTMLElement): void;
  /** Fetches and redraws what changes; rejects when the server does not answer. */
  update(): Promise<void>;
}
