export default function HomePage() { return <h1>Home</h1>; }
